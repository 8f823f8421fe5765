package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/internal/fuzzing"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// FuzzClassesFile: parseClassesFile never panics on any file; what it
// accepts names each class once, validly, with caps the policy accepts and
// no negative budget, and reads back equal (quantities by value) when
// written out again as YAML.
func FuzzClassesFile(f *testing.F) {
	for _, seed := range []string{
		"- name: gold\n  caps: {cpu: 4, memory: 8Gi}\n  budget: {cpu: \"64\"}\n- name: silver\n",
		"[]\n",
		"",
		"- name: gold\n- name: gold\n",
		"- name: default\n",
		"- name: gold\n  caps: {cpu: -1}\n",
		"- name: gold\n  caps: {cpu: 1000E}\n",
		"- name: gold\n  budget: {cpu: 1m}\n  caps: {}\n",
		"- {name: a.b-c, caps: {nvidia.com/gpu: 2}}\n",
		"name: gold\n",
		"- name: gold\n  bugdet: {}\n",
		"- name: gold\n  caps: null\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzing.LongExponent(string(data)) {
			t.Skip("apimachinery's ParseQuantity is slow on long exponents")
		}
		specs, err := parseClassesFile(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range specs {
			assert.NoError(t, resourceslice.ValidateClass(s.Name), "accepted class name %q", s.Name)
			assert.False(t, seen[s.Name], "class %q accepted twice", s.Name)
			seen[s.Name] = true
			_, err := cappedresources.New(s.Caps)
			assert.NoError(t, err, "class %q: caps accepted by the file but not by the policy", s.Name)
			for name, q := range s.Budget {
				assert.GreaterOrEqual(t, q.Sign(), 0, "class %q: budget %s=%s", s.Name, name, q.String())
			}
		}
		out, err := yaml.Marshal(specs)
		require.NoError(t, err)
		again, err := parseClassesFile(out)
		require.NoError(t, err, "%q, written from %q, does not parse again", out, data)
		assert.Empty(t, cmp.Diff(specs, again, cmpopts.EquateEmpty(),
			cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })),
			"-first +second: %q written as %q", data, out)
	})
}
