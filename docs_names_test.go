package sliceclass_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docQualifiers are the names the docs qualify the SDK's identifiers with
// (`budget.New`, `slicetest.WithRequest`), and the package each stands for
// in hack/api.txt.
var docQualifiers = map[string]string{
	"budget":        "budget",
	"conditions":    "conditions",
	"controlplane":  "testing/controlplane",
	"envkit":        "testing/envkit",
	"flags":         "flags",
	"handler":       "handler",
	"resourceslice": "resourceslice",
	"slicetest":     "testing",
	"v1alpha1":      "api/v1alpha1",
}

// apiNames reads hack/api.txt: per package (its path in the module), the
// exported names it lists, methods by their own name.
func apiNames(t *testing.T) (names map[string]map[string]bool, counts map[string]int) {
	t.Helper()
	f, err := os.Open(filepath.Join("hack", "api.txt"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	line := regexp.MustCompile(`^pkg github\.com/sliceclass/sliceclass/([\w/]+), (?:(?:const|var|func|type) (\w+)|method \([^)]*\) (\w+))`)
	count := regexp.MustCompile(`^# count github\.com/sliceclass/sliceclass/([\w/]+) (\d+)$`)
	names, counts = map[string]map[string]bool{}, map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			if names[m[1]] == nil {
				names[m[1]] = map[string]bool{}
			}
			names[m[1]][m[2]+m[3]] = true
		}
		if m := count.FindStringSubmatch(sc.Text()); m != nil {
			n, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			counts[m[1]] = n
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, names, "hack/api.txt lists no names")
	return names, counts
}

// Every exported name the docs mention, qualified by its package
// (`budget.WithCohort`, `envkit.Eventually`), is in the SDK's surface
// (hack/api.txt): a removal or rename that left a page behind fails here,
// not in a user's editor.
func TestDocNamesExist(t *testing.T) {
	names, _ := apiNames(t)
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	pages = append(pages, "README.md", "RELIABILITY.md", "BENCHMARKS.md")
	for _, dir := range []string{"api/v1alpha1", "budget", "conditions", "flags", "handler", "resourceslice",
		"testing", "testing/controlplane", "testing/envkit", "."} {
		pages = append(pages, filepath.Join(dir, "doc.go"))
	}
	ref := regexp.MustCompile(`\b(` + strings.Join(sortedKeys(docQualifiers), "|") + `)\.([A-Z]\w*)`)
	// A Go doc link: [github.com/sliceclass/sliceclass/testing.New] or
	// [github.com/sliceclass/sliceclass/testing.Harness.Reconcile].
	link := regexp.MustCompile(`\[github\.com/sliceclass/sliceclass/([\w/]+)\.([A-Z]\w*)(?:\.([A-Z]\w*))?\]`)
	checked := 0
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		require.NoError(t, err)
		for i, l := range strings.Split(string(raw), "\n") {
			for _, m := range ref.FindAllStringSubmatch(l, -1) {
				checked++
				assert.True(t, names[docQualifiers[m[1]]][m[2]], "%s:%d names %s.%s, which hack/api.txt does not list", page, i+1, m[1], m[2])
			}
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				checked++
				name := m[2]
				if m[3] != "" {
					name = m[3] // a method: its own name
				}
				assert.True(t, names[m[1]][m[2]] && names[m[1]][name], "%s:%d links %s, which hack/api.txt does not list", page, i+1, m[0])
			}
		}
	}
	assert.Greater(t, checked, 100, "the pages name the SDK's identifiers")
}

// docs/api.md's table of names per package is hack/api.txt's count lines.
func TestDocAPICounts(t *testing.T) {
	_, counts := apiNames(t)
	raw, err := os.ReadFile(filepath.Join("docs", "api.md"))
	require.NoError(t, err)
	row := regexp.MustCompile(`^\| ([\w/]+) \| (\d+) \|$`)
	shown := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			shown[m[1]] = m[2]
		}
	}
	want, total := map[string]string{}, 0
	for pkg, n := range counts {
		want[pkg] = strconv.Itoa(n)
		total += n
	}
	want["total"] = strconv.Itoa(total)
	assert.Equal(t, want, shown, "docs/api.md's table (package | names) against hack/api.txt's # count lines")
	assert.Contains(t, string(raw), "Today the file counts "+strconv.Itoa(total)+" names")
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
