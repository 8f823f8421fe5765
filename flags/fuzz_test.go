package flags_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/internal/fuzzing"
)

// FuzzParseClassesConfig: a classes file is what a ConfigMap holds, edited
// by hand. ParseClassesConfig never panics on it, and every file it
// accepts builds (ClassBuilder.Build, node pools and SliceBudgets stood
// in for): a file refused only once the manager builds it would stop
// every class at start-up, or fail every reload.
func FuzzParseClassesConfig(f *testing.F) {
	for _, seed := range []string{
		tiers,
		"- {name: gold, caps: {cpu: 4}, budget: {cpu: 8}, consumerLimit: {cpu: 2}, consumerLimits: [{consumer: acme, limits: {cpu: 1}}], preemption: {withinBudget: LowerPriority}, evictionAfterSeconds: 60}\n",
		"budgets: [{name: p, total: {cpu: 8}, consumerLimits: [{consumer: a, limits: {cpu: 1}}, {consumer: b, limits: {}}], preemption: {}, evictionAfterSeconds: 0}]\nclasses: [{name: gold, budgets: [p]}]\n",
		"- {name: gold, budget: {cpu: 8}, preemption: true, evictionAfter: 10m, consumerLimits: {acme: {cpu: 1}}}\n",
		"- {name: gold, sliceBudget: premium, priority: -3}\n- {name: spot, sliceBudget: premium, priority: high}\n",
		"budgets: [{name: p, pool: {selector: {a: b}, resources: [cpu], reserve: {cpu: 1}, sharePercent: 50, localPods: true}}]\nclasses: [{name: gold, budgets: [p]}]\n",
		"classes: [{name: gold, sliceBudget: premium, consumerLimit: {cpu: 1}}]\n",
		"[]\n",
		"- [1, 2]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzing.LongExponent(string(data)) {
			t.Skip("apimachinery's ParseQuantity is slow on long exponents")
		}
		cfg, err := flags.ParseClassesConfig(data)
		if err != nil {
			return
		}
		classes, err := newFakeBudgets().builder().Build(cfg)
		require.NoError(t, err, "accepted but does not build: %q", data)
		require.Len(t, classes, len(cfg.Classes))
		for i, c := range classes {
			assert.Equal(t, cfg.Classes[i].Name, c.Name)
			want := len(c.Budgets) // a WithBudget per budget
			if c.Entry.Priority != 0 {
				want++ // and WithPriority
			}
			assert.Len(t, c.Options, want, "class %q", c.Name)
		}
	})
}
