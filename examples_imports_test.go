package sliceclass_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// internalPrefix is where the module's internal packages live.
const internalPrefix = "github.com/sliceclass/sliceclass/internal"

// internalImports returns the imports of the Go source src that a user's
// module could not make: the SDK's internal packages.
func internalImports(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		if path == internalPrefix || strings.HasPrefix(path, internalPrefix+"/") {
			bad = append(bad, path)
		}
	}
	return bad, nil
}

func TestInternalImports(t *testing.T) {
	cases := map[string]struct {
		src  string
		want []string
	}{
		"Public": {src: "package p\nimport (\n\t\"github.com/sliceclass/sliceclass/testing/envkit\"\n\t\"fmt\"\n)\n"},
		"Internal": {src: "package p\nimport books \"github.com/sliceclass/sliceclass/internal/ledger\"\n",
			want: []string{"github.com/sliceclass/sliceclass/internal/ledger"}},
		"LookAlike": {src: "package p\nimport \"github.com/sliceclass/sliceclass/internals\"\n"},
	}
	for name, tc := range cases {
		got, err := internalImports(token.NewFileSet(), name+".go", tc.src)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, got, name)
	}
}

// Everything under examples/, tests included, is what a user copies into
// a module of their own, where the SDK's internal packages cannot be
// imported: examples use public packages only (testing/envkit has what
// their integration tests need).
func TestExamplesImportOnlyPublicPackages(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".go" {
			return err
		}
		files++
		bad, err := internalImports(fset, path, nil)
		if err != nil {
			return err
		}
		for _, p := range bad {
			t.Errorf("%s imports %s: examples may import public packages only", path, p)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 20, "the walk found too few Go files under examples/")
}
