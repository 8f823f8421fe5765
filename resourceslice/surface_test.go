package resourceslice

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxExports bounds the package's public surface (issue 18: a surface that
// fits a screen): every exported constant, variable, function, type and
// method of an exported type counts once. 46 since issue 43: AddToScheme,
// the one call a user's main makes for the types the SDK reads and writes.
const maxExports = 46

func TestPublicSurfaceFitsAScreen(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); !ok || !id.IsExported() {
						continue
					}
					names = append(names, recv.(*ast.Ident).Name+"."+d.Name.Name)
					continue
				}
				names = append(names, d.Name.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	if len(names) > maxExports {
		t.Errorf("resourceslice exports %d identifiers, more than %d: %s", len(names), maxExports, strings.Join(names, ", "))
	}
	t.Logf("resourceslice exports %d identifiers: %s", len(names), strings.Join(names, ", "))
}
