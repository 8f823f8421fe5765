package flags

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readClassesConfig (what ClassConfigs reads --classes-file with) reads either form of the file the chart renders, and
// its errors name the file. The names of the classes to serve are its
// Classes' (ClassConfigs serves them whole).
func TestReadClassesConfig(t *testing.T) {
	for _, tc := range []struct {
		reason, file string
		want         []string
		err          string
	}{
		{reason: "the list form, with the manager's own fields", file: "- name: gold\n  caps: {cpu: \"4\"}\n- name: silver\n", want: []string{"gold", "silver"}},
		{reason: "the object form, with shared budgets", file: "budgets:\n  - {name: p, total: {cpu: \"8\"}}\nclasses:\n  - {name: gold, budgets: [p]}\n", want: []string{"gold"}},
		{reason: "an explicit empty list serves no class", file: "[]\n", want: []string{}},
		{reason: "an object with an empty list serves no class", file: "classes: []\n", want: []string{}},
		{reason: "an empty file is a mistake", file: "\n", err: "the file is empty (write [] to serve no class)"},
		{reason: "an object without classes", file: "budgets: []\n", err: "the file has no classes"},
		{reason: "a class without a name", file: "- caps: {cpu: \"1\"}\n", err: "entry 1"},
		{reason: "a class twice", file: "[{name: gold}, {name: gold}]", err: `class "gold" given twice`},
		{reason: "Liqo's own class", file: "[{name: default}]", err: "default"},
		{reason: "not YAML of either form", file: "- [1, 2]\n", err: "entry 1"},
	} {
		path := filepath.Join(t.TempDir(), "classes.yaml")
		require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o600))
		cfg, err := readClassesConfig(path)
		if tc.err != "" {
			if assert.Error(t, err, tc.reason) {
				assert.Contains(t, err.Error(), tc.err, tc.reason)
				assert.Contains(t, err.Error(), path, "%s: the error names the file", tc.reason)
			}
			continue
		}
		require.NoError(t, err, tc.reason)
		names := []string{}
		for _, c := range cfg.Classes {
			names = append(names, c.Name)
		}
		assert.Equal(t, tc.want, names, tc.reason)
	}
	_, err := readClassesConfig(filepath.Join(t.TempDir(), "nope"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "got %v", err)
}
