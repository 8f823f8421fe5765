package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hack/slices.columns (what the docs use in the repo) and the
// custom-columns line the command prints (for users outside it) show the
// same columns.
func TestColumnsFileMatchesPrintedColumns(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "hack", "slices.columns"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 2, "a custom-columns file: headers, then JSONPaths")
	headers, paths := strings.Fields(lines[0]), strings.Fields(lines[1])
	require.Len(t, paths, len(headers))
	var got [][2]string
	for i := range headers {
		got = append(got, [2]string{headers[i], paths[i]})
	}
	assert.Equal(t, sliceColumns, got)
}

// A printed argument the shell would change is quoted.
func TestShellQuotes(t *testing.T) {
	s := kubectlStep{args: []string{"get", "x", "-o", `custom-columns=A:.b[?(@.c=="d")].e`, "it's"}}
	assert.Equal(t, `kubectl get x -o 'custom-columns=A:.b[?(@.c=="d")].e' 'it'\''s'`, s.shell())
}
