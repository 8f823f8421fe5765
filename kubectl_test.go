package sliceclass_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// kubectlResource finds the resource a kubectl command names: the word
// after its verb (flags such as -n NS may come first).
var kubectlResource = regexp.MustCompile("kubectl\\s+(?:-{1,2}[\\w-]+(?:[ =][^\\s-]\\S*)?\\s+)*(?:get|describe|edit|patch|delete|label|annotate|explain|wait|apply|create)\\s+([^\\s'\"`]+)")

// slicesNamed returns the names a kubectl command in line gives Liqo's
// slices, and which of those lack Liqo's group.
func slicesNamed(line string) (all, short []string) {
	for _, m := range kubectlResource.FindAllStringSubmatch(line, -1) {
		for _, res := range strings.Split(m[1], ",") {
			name, _, _ := strings.Cut(res, "/")
			kind, group, _ := strings.Cut(name, ".")
			switch strings.ToLower(kind) {
			case "resourceslice", "resourceslices", "rslice", "rslices":
				all = append(all, name)
				if group != "authentication.liqo.io" {
					short = append(short, name)
				}
			}
		}
	}
	return all, short
}

func TestSlicesNamed(t *testing.T) {
	cases := map[string]struct {
		line      string
		all, want []string
	}{
		"Full":      {line: "kubectl get resourceslices.authentication.liqo.io -A", all: []string{"resourceslices.authentication.liqo.io"}},
		"Short":     {line: "  kubectl get resourceslice -A", all: []string{"resourceslice"}, want: []string{"resourceslice"}},
		"FlagFirst": {line: "kubectl -n liqo describe resourceslices/demo", all: []string{"resourceslices"}, want: []string{"resourceslices"}},
		"ShortName": {line: "`kubectl get rslice`", all: []string{"rslice"}, want: []string{"rslice"}},
		"Leases":    {line: "kubectl get leases -l sliceclass.io/class", all: nil},
		"GoCode":    {line: `"kubectl get leases -l %s", resourceslice.LabelClass`, all: nil},
	}
	for name, tc := range cases {
		all, short := slicesNamed(tc.line)
		assert.Equal(t, tc.all, all, name)
		assert.Equal(t, tc.want, short, name)
	}
}

// On Kubernetes 1.34+ the plain name resourceslice is resource.k8s.io's
// ResourceSlice (DRA), not Liqo's: every kubectl line we ship, in docs,
// chart notes and the commands' output, names Liqo's by its full name.
func TestKubectlNamesLiqoResourceSlices(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".md", ".txt", ".yaml", ".yml", ".tpl", ".go", ".sh":
		default:
			return nil
		}
		if path == "kubectl_test.go" {
			return nil // its cases name slices wrongly on purpose
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(raw), "\n") {
			all, short := slicesNamed(line)
			checked += len(all)
			for _, name := range short {
				t.Errorf("%s:%d: %q: name Liqo's slices resourceslices.authentication.liqo.io (on Kubernetes 1.34+ %q is resource.k8s.io's)",
					path, i+1, strings.TrimSpace(line), name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	assert.NotZero(t, checked, "no kubectl line naming Liqo's slices found: the walk or the pattern is broken")
}
