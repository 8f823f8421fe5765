package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/examples/cappedresources"
	sdkflags "github.com/sliceclass/sliceclass/flags"
)

// FuzzClassesFile: parseClassesFile never panics on any file, in either
// form (a list of classes, or {budgets, classes}); what it accepts names
// each class and each shared budget once, validly, with caps the policy
// accepts (or none: --cap applies), no negative budget, consumer limit or
// reserve, a share within 1–100, a consumer limit only on a budget, and
// only budgets the file declares; and it reads back equal (quantities by
// value) when written out again as YAML.
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
		"- name: gpu\n  caps: {nvidia.com/gpu: 2}\n  pool: {selector: {pool: gpu}, resources: [nvidia.com/gpu], reserve: {nvidia.com/gpu: 1}, sharePercent: 90, localPods: true}\n  consumerLimit: {nvidia.com/gpu: 2}\n",
		"budgets:\n  - {name: provider, pool: {selector: {}}, consumerLimit: {cpu: 8}}\n  - {name: premium, total: {cpu: 64}}\nclasses:\n  - {name: gold, budget: {cpu: 16}, budgets: [premium, provider]}\n  - {name: silver, budgets: [provider]}\n",
		"classes: []\n",
		"budgets: []\n",
		"classes: [{name: gold, budgets: [nope]}]\n",
		"- name: gold\n  consumerLimit: {cpu: 1}\n",
		"- name: gold\n  pool: {selector: {}, sharePercent: 101}\n",
		"- name: gold\n  budget: {cpu: 1}\n  pool: {selector: {}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if longExponent(string(data)) {
			t.Skip("apimachinery's ParseQuantity is slow on long exponents")
		}
		cfg, err := parseClassesFile(data)
		if err != nil {
			return
		}
		shared := map[string]bool{}
		for _, b := range cfg.Budgets {
			assert.NotEmpty(t, b.Name, "a shared budget without a name")
			assert.False(t, shared[b.Name], "budget %q accepted twice", b.Name)
			shared[b.Name] = true
			assert.True(t, (b.Total == nil) != (b.Pool == nil), "budget %q: want exactly one of total and pool", b.Name)
			checkBudget(t, "budget "+b.Name, b.Total, b.Pool, b.ConsumerLimit)
		}
		seen := map[string]bool{}
		for _, s := range cfg.Classes {
			// The SDK's rule: not Liqo's own ("" or "default"), and a label value.
			assert.True(t, s.Name != "" && s.Name != "default" && len(validation.IsValidLabelValue(s.Name)) == 0,
				"accepted class name %q", s.Name)
			assert.False(t, seen[s.Name], "class %q accepted twice", s.Name)
			seen[s.Name] = true
			if s.Caps != nil {
				_, err := cappedresources.New(s.Caps)
				assert.NoError(t, err, "class %q: caps accepted by the file but not by the policy", s.Name)
			}
			assert.False(t, s.Budget != nil && s.Pool != nil, "class %q: budget and pool", s.Name)
			if s.Budget == nil && s.Pool == nil {
				assert.Nil(t, s.ConsumerLimit, "class %q: a consumer limit with no budget of its own", s.Name)
			}
			checkBudget(t, "class "+s.Name, s.Budget, s.Pool, s.ConsumerLimit)
			for _, n := range s.Budgets {
				assert.True(t, shared[n], "class %q draws from undeclared budget %q", s.Name, n)
			}
		}
		out, err := yaml.Marshal(cfg)
		require.NoError(t, err)
		again, err := parseClassesFile(out)
		require.NoError(t, err, "%q, written from %q, does not parse again", out, data)
		assert.Empty(t, cmp.Diff(cfg, again, cmpopts.EquateEmpty(), cmp.AllowUnexported(sdkflags.ClassesConfig{}),
			cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })),
			"-first +second: %q written as %q", data, out)
	})
}

// checkBudget asserts that an accepted budget holds no negative quantity,
// and a pool a valid share and a selector.
func checkBudget(t *testing.T, what string, total corev1.ResourceList, pool *sdkflags.PoolEntry, limit corev1.ResourceList) {
	t.Helper()
	for _, rl := range []corev1.ResourceList{total, limit} {
		for name, q := range rl {
			assert.GreaterOrEqual(t, q.Sign(), 0, "%s: %s=%s", what, name, q.String())
		}
	}
	if limit != nil {
		assert.NotEmpty(t, limit, "%s: an empty consumer limit", what)
	}
	if pool == nil {
		return
	}
	assert.NotNil(t, pool.Selector, "%s: a pool without a selector", what)
	assert.True(t, pool.SharePercent == 0 || (pool.SharePercent >= 1 && pool.SharePercent <= 100), "%s: share %d", what, pool.SharePercent)
	for name, q := range pool.Reserve {
		assert.GreaterOrEqual(t, q.Sign(), 0, "%s: reserve %s=%s", what, name, q.String())
	}
}

// longExponent reports whether s holds an exponent of five digits or more
// (1e-100000000): apimachinery's ParseQuantity takes tens of seconds and
// hundreds of MB on those, which stalls a fuzzing worker, so the target
// skips them. (Examples import public packages only: this is the module's
// internal/fuzzing.LongExponent, which examples cannot import.)
func longExponent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != 'e' && s[i] != 'E' {
			continue
		}
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		digits := 0
		for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
			digits++
		}
		if digits >= 5 {
			return true
		}
	}
	return false
}
