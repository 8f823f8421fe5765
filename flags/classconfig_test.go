package flags_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/flags"
)

// fakeBudgets stands in for budget.NewNodePool and budget.FromObject: a
// budget of 10 CPU per call, counted by name; names in fail are refused.
type fakeBudgets struct {
	pools, objects map[string]int
	fail           map[string]bool
}

func newFakeBudgets(fail ...string) *fakeBudgets {
	f := &fakeBudgets{pools: map[string]int{}, objects: map[string]int{}, fail: map[string]bool{}}
	for _, n := range fail {
		f.fail[n] = true
	}
	return f
}

func (f *fakeBudgets) build(count map[string]int, name string) (*budget.Budget, error) {
	count[name]++
	if f.fail[name] {
		return nil, errors.New("refused by the test")
	}
	return budget.New(name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
}

// builder returns a ClassBuilder building through f: no manager needed.
func (f *fakeBudgets) builder() *flags.ClassBuilder {
	b := flags.NewClassBuilder(nil)
	b.NodePool = func(name string, _ labels.Selector, _ ...budget.NodePoolOption) (*budget.Budget, error) {
		return f.build(f.pools, name)
	}
	b.FromObject = func(name string) (*budget.Budget, error) { return f.build(f.objects, name) }
	return b
}

func parseConfig(t *testing.T, file string) flags.ClassesConfig {
	t.Helper()
	cfg, err := flags.ParseClassesConfig([]byte(file))
	require.NoError(t, err)
	return cfg
}

// byName indexes classes by name.
func byName(classes []flags.ClassConfig) map[string]flags.ClassConfig {
	out := map[string]flags.ClassConfig{}
	for _, c := range classes {
		out[c.Name] = c
	}
	return out
}

const tiers = `
budgets:
  - {name: provider, pool: {selector: {}, resources: [cpu]}, consumerLimit: {cpu: "8"}}
  - {name: idle, total: {cpu: "2"}}
classes:
  - {name: gold, caps: {cpu: "8"}, sliceBudget: premium, budgets: [provider], priority: 100}
  - {name: spot, caps: {cpu: "8"}, sliceBudget: premium, budgets: [provider]}
  - {name: silver, budget: {cpu: "4"}, consumerLimit: {cpu: "1"}}
  - {name: bronze}
`

// Each class comes whole, in the file's order: the budgets it draws from
// (in its options) and its priority; a budget several classes name is one
// budget, built once.
func TestClassBuilderGivesEachClassItsBudgetsOnce(t *testing.T) {
	fake := newFakeBudgets()
	classes, err := fake.builder().Build(parseConfig(t, tiers))
	require.NoError(t, err)
	require.Len(t, classes, 4)
	assert.Equal(t, []string{"gold", "spot", "silver", "bronze"}, []string{classes[0].Name, classes[1].Name, classes[2].Name, classes[3].Name})
	c := byName(classes)

	gold, spot := c["gold"], c["spot"]
	require.Len(t, gold.Budgets, 2, "the SliceBudget's and the shared pool")
	assert.Equal(t, "premium", gold.Budgets[0].Name())
	assert.Equal(t, "provider", gold.Budgets[1].Name())
	assert.Same(t, gold.Budgets[0], spot.Budgets[0], "one budget follows the SliceBudget both classes name")
	assert.Same(t, gold.Budgets[1], spot.Budgets[1], "one budget for the shared pool")
	assert.Equal(t, map[string]int{"premium": 1}, fake.objects)
	assert.Equal(t, map[string]int{"provider": 1}, fake.pools)
	assert.Len(t, gold.Options, 3, "a WithBudget per budget, and WithPriority")
	assert.Len(t, spot.Options, 2, "no priority given: none set")
	assert.Equal(t, int32(100), gold.Entry.Priority)
	assert.True(t, resource.MustParse("8").Equal(gold.Entry.Caps[corev1.ResourceCPU]), "caps for the handler")

	silver := c["silver"]
	require.Len(t, silver.Budgets, 1)
	assert.Equal(t, "silver", silver.Budgets[0].Name(), "its own budget, named after it")
	assert.Len(t, silver.Options, 1)
	assert.Empty(t, c["bronze"].Budgets)
	assert.Empty(t, c["bronze"].Options, "nothing in the file: no option")
}

// Building again from the same file keeps every budget (what its slices
// hold is kept); a changed entry rebuilds that budget only, and a change
// of per-consumer overrides only is applied to the running budget.
func TestClassBuilderKeepsUnchangedBudgets(t *testing.T) {
	fake := newFakeBudgets()
	b := fake.builder()
	first, err := b.Build(parseConfig(t, tiers))
	require.NoError(t, err)
	again, err := b.Build(parseConfig(t, tiers))
	require.NoError(t, err)
	for i := range first {
		require.Len(t, again[i].Budgets, len(first[i].Budgets))
		for j := range first[i].Budgets {
			assert.Same(t, first[i].Budgets[j], again[i].Budgets[j], "class %s, budget %d", first[i].Name, j)
		}
	}
	assert.Equal(t, map[string]int{"premium": 1}, fake.objects)
	assert.Equal(t, map[string]int{"provider": 1}, fake.pools)

	changed, err := b.Build(parseConfig(t, `
budgets:
  - {name: provider, pool: {selector: {}, resources: [cpu]}, consumerLimit: {cpu: "8"}, consumerLimits: [{consumer: acme, limits: {cpu: "1"}}]}
classes:
  - {name: gold, sliceBudget: premium, budgets: [provider]}
  - {name: silver, budget: {cpu: "5"}}
`))
	require.NoError(t, err)
	c := byName(changed)
	assert.Same(t, first[0].Budgets[1], c["gold"].Budgets[1], "an override changed: the running pool takes it")
	assert.Equal(t, map[string]int{"provider": 1}, fake.pools)
	assert.NotSame(t, byName(first)["silver"].Budgets[0], c["silver"].Budgets[0], "a new total: a new budget")
}

// A budget's rules in a SliceBudget's shapes, as a reload sees them:
// preemption unset, {} and {withinBudget: Never} say one thing (the CRD
// defaults {} to Never), so rewording one keeps the running budget and what
// its slices hold; turning preemption or eviction on builds a new one (the
// options are fixed at build); a change of consumerLimits alone is applied
// to the running budget.
func TestClassBuilderBudgetRulesAsASliceBudgetSays(t *testing.T) {
	b := newFakeBudgets().builder()
	file := func(rules string) flags.ClassesConfig {
		return parseConfig(t, "budgets: [{name: pool, total: {cpu: 10}"+rules+"}]\nclasses: [{name: gold, budgets: [pool]}]\n")
	}
	build := func(rules string) *budget.Budget {
		t.Helper()
		classes, err := b.Build(file(rules))
		require.NoError(t, err, rules)
		require.Len(t, classes[0].Budgets, 1)
		return classes[0].Budgets[0]
	}
	first := build("")
	assert.Same(t, first, build(", preemption: {}"), "{} is Never")
	assert.Same(t, first, build(", preemption: {withinBudget: Never}"), "Never is no preemption")
	preempting := build(", preemption: {withinBudget: LowerPriority}")
	assert.NotSame(t, first, preempting, "preemption turned on: a new budget")
	assert.Same(t, preempting, build(", preemption: {withinBudget: LowerPriority}, consumerLimits: [{consumer: acme, limits: {cpu: 1}}]"),
		"an override added: the running budget takes it")
	evicting := build(", preemption: {withinBudget: LowerPriority}, consumerLimits: [{consumer: acme, limits: {cpu: 1}}], evictionAfterSeconds: 0")
	assert.NotSame(t, preempting, evicting, "eviction at once: a new budget, built (WithEvictionAfter refuses 0 as a duration)")
	assert.NotSame(t, evicting, build(", preemption: {withinBudget: LowerPriority}, consumerLimits: [{consumer: acme, limits: {cpu: 1}}], evictionAfterSeconds: 600"),
		"another delay: a new budget")
}

// A budget that cannot be built is an error naming the class and the
// field; a SliceBudget's budget is built once however often it is named.
func TestClassBuilderErrorsNameTheClass(t *testing.T) {
	fake := newFakeBudgets("broken")
	_, err := fake.builder().Build(parseConfig(t, "- {name: gold, sliceBudget: broken}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `class "gold": sliceBudget "broken": refused by the test`)

	_, err = (&flags.ClassBuilder{}).Build(flags.ClassesConfig{})
	assert.ErrorContains(t, err, "NewClassBuilder", "a zero builder says how to make one, and does not panic")
}

// ClassConfigs with --class-name: each class with the flags' options; with
// --classes-file: the file's classes, each with the flags' options first.
// A bad file names the file, the class and the field.
func TestClassConfigs(t *testing.T) {
	v := parse(t, "--class-name=gold,silver", "--class-lease-namespace=liqo")
	classes, err := v.ClassConfigs(nil)
	require.NoError(t, err)
	require.Len(t, classes, 2)
	assert.Equal(t, "gold", classes[0].Name)
	assert.Equal(t, "silver", classes[1].Name)
	assert.Len(t, classes[0].Options, len(v.ClassDefaults()))
	assert.Empty(t, classes[0].Budgets)

	path := filepath.Join(t.TempDir(), "classes.yaml")
	require.NoError(t, os.WriteFile(path, []byte("classes: [{name: gold, budget: {cpu: \"4\"}, priority: 7}, {name: silver}]\n"), 0o600))
	v = parse(t, "--classes-file="+path)
	classes, err = v.ClassConfigs(nil) // no pool and no SliceBudget: no manager needed
	require.NoError(t, err)
	require.Len(t, classes, 2)
	assert.Len(t, classes[0].Options, len(v.ClassDefaults())+2, "the flags', then its budget and priority")
	require.Len(t, classes[0].Budgets, 1)
	assert.Equal(t, "gold", classes[0].Budgets[0].Name())
	assert.Len(t, classes[1].Options, len(v.ClassDefaults()))

	require.NoError(t, os.WriteFile(path, []byte("classes: [{name: gold, sliceBudget: premium, consumerLimit: {cpu: \"4\"}}]\n"), 0o600))
	_, err = v.ClassConfigs(nil)
	require.Error(t, err)
	for _, want := range []string{path, `class "gold"`, "consumerLimit", "kubectl edit sb premium"} {
		assert.Contains(t, err.Error(), want)
	}
}

// What the classes file refuses, each error naming the class (or budget)
// and the field. Where a class's entry and the SliceBudget it names could
// both say a budget rule, the file refuses it: the object's spec is the one
// place for it.
func TestParseClassesConfigNamesClassAndField(t *testing.T) {
	for _, tc := range []struct {
		reason, file string
		want         []string
	}{
		{"a consumer limit beside a SliceBudget: the object's consumerLimit is the one",
			"- {name: gold, sliceBudget: premium, consumerLimit: {cpu: 1}}\n",
			[]string{`class "gold"`, `sliceBudget "premium"`, "consumerLimit", "in its spec"}},
		{"per-consumer limits beside a SliceBudget",
			"- {name: gold, sliceBudget: premium, consumerLimits: [{consumer: acme, limits: {cpu: 1}}]}\n",
			[]string{`class "gold"`, `sliceBudget "premium": consumerLimits`}},
		{"preemption beside a SliceBudget",
			"- {name: gold, sliceBudget: premium, preemption: {withinBudget: LowerPriority}}\n",
			[]string{`class "gold"`, `sliceBudget "premium": preemption`}},
		{"preemption Never beside a SliceBudget: set, whatever its value",
			"- {name: gold, sliceBudget: premium, preemption: {withinBudget: Never}}\n",
			[]string{`class "gold"`, `sliceBudget "premium": preemption`}},
		{"eviction beside a SliceBudget",
			"- {name: gold, sliceBudget: premium, evictionAfterSeconds: 60}\n",
			[]string{`class "gold"`, `sliceBudget "premium": evictionAfterSeconds`}},
		{"a total beside a SliceBudget",
			"- {name: gold, sliceBudget: premium, budget: {cpu: 1}}\n",
			[]string{`class "gold"`, "budget or pool are exclusive"}},
		{"a rule with no budget of the class's own to apply to",
			"- {name: gold, preemption: {withinBudget: LowerPriority}, evictionAfterSeconds: 0}\n",
			[]string{`class "gold"`, "preemption, evictionAfterSeconds: these apply to the class's own budget"}},
		// The budget rules have a SliceBudget's shapes and its refusals.
		{"a consumer named twice", "- {name: gold, budget: {cpu: 8}, consumerLimits: [{consumer: acme, limits: {cpu: 1}}, {consumer: acme, limits: {cpu: 2}}]}\n",
			[]string{`class "gold"`, `consumerLimits: consumer "acme" given twice`}},
		{"an override that limits nothing", "budgets: [{name: p, total: {cpu: 8}, consumerLimits: [{consumer: acme, limits: {}}]}]\nclasses: []\n",
			[]string{`budget "p"`, `consumerLimits: consumer "acme": its limits name no resource`}},
		{"an override with no limits", "budgets: [{name: p, total: {cpu: 8}, consumerLimits: [{consumer: acme}]}]\nclasses: []\n",
			[]string{`budget "p"`, `consumerLimits: consumer "acme": its limits name no resource`}},
		{"an override with no consumer", "- {name: gold, budget: {cpu: 8}, consumerLimits: [{limits: {cpu: 1}}]}\n",
			[]string{`class "gold"`, "consumerLimits: entry 1: no consumer"}},
		{"a consumer name longer than a SliceBudget takes", "- {name: gold, budget: {cpu: 8}, consumerLimits: [{consumer: " + strings.Repeat("a", 254) + ", limits: {cpu: 1}}]}\n",
			[]string{`class "gold"`, "consumerLimits: entry 1: consumer of 254 characters, more than the 253"}},
		{"more overrides than a SliceBudget takes", "- {name: gold, budget: {cpu: 8}, consumerLimits: [" + manyOverrides(257) + "]}\n",
			[]string{`class "gold"`, "consumerLimits: 257 entries, more than the 256"}},
		{"a negative eviction delay", "budgets: [{name: p, total: {cpu: 8}, evictionAfterSeconds: -300}]\nclasses: []\n",
			[]string{`budget "p"`, "evictionAfterSeconds: -300 is negative"}},
		{"an eviction delay as a duration", "- {name: gold, budget: {cpu: 8}, evictionAfterSeconds: 10m}\n",
			[]string{`class "gold" (entry 1)`, "evictionAfterSeconds"}},
		{"an eviction delay past int32", "- {name: gold, budget: {cpu: 8}, evictionAfterSeconds: 2147483648}\n",
			[]string{`class "gold" (entry 1)`, "evictionAfterSeconds"}},
		{"an unknown preemption policy", "- {name: gold, pool: {selector: {}}, preemption: {withinBudget: Always}}\n",
			[]string{`class "gold"`, `preemption: withinBudget "Always" is not a policy: write Never or LowerPriority`}},
		{"a cohort rule on a budget in no cohort", "budgets: [{name: p, total: {cpu: 8}, preemption: {reclaimWithinCohort: Any}}]\nclasses: []\n",
			[]string{`budget "p"`, `preemption: reclaimWithinCohort "Any": a classes file's budget is in no cohort`}},
		{"a typo in the preemption policy's field", "budgets: [{name: p, total: {cpu: 8}, preemption: {withinBudgt: LowerPriority}}]\nclasses: []\n",
			[]string{`budget "p" (entry 1)`, `unknown field "withinBudgt"`}},
		// The old shapes are refused, saying the new one.
		{"preemption as a bool", "- {name: gold, budget: {cpu: 8}, preemption: true}\n",
			[]string{`class "gold" (entry 1)`, "preemption is {withinBudget: LowerPriority} now"}},
		{"preemption false as a bool", "budgets: [{name: p, total: {cpu: 8}, preemption: false}]\nclasses: []\n",
			[]string{`budget "p" (entry 1)`, "preemption is {withinBudget: Never} now"}},
		{"evictionAfter, a duration", "budgets: [{name: p, total: {cpu: 8}, evictionAfter: 10m}]\nclasses: []\n",
			[]string{`budget "p" (entry 1)`, "evictionAfter is evictionAfterSeconds now", "10m is evictionAfterSeconds: 600"}},
		{"evictionAfter beside a SliceBudget", "- {name: gold, sliceBudget: premium, evictionAfter: 1m}\n",
			[]string{`class "gold" (entry 1)`, "evictionAfter is evictionAfterSeconds now"}},
		{"consumerLimits as a map", "classes: [{name: gold}, {name: spot, budget: {cpu: 8}, consumerLimits: {globex: {cpu: 0}}}]\n",
			[]string{`class "spot" (entry 2)`, "consumerLimits: a map of consumers is a list now", "[{consumer: globex, limits: {...}}]"}},
		{"a negative cap", "- {name: gold, caps: {cpu: -1}}\n", []string{`class "gold"`, "caps: cpu: negative"}},
		{"a priority that is not a number", "- {name: gold}\n- {name: spot, priority: high}\n",
			[]string{`class "spot" (entry 2)`, "priority"}},
		{"a typo in a class's field", "classes: [{name: gold}, {name: spot, prority: 1}]\n",
			[]string{`class "spot" (entry 2)`, `unknown field "prority"`}},
		{"a typo in a shared budget's field", "budgets: [{name: p, totl: {cpu: 1}}]\nclasses: []\n",
			[]string{`budget "p" (entry 1)`, `unknown field "totl"`}},
		{"a shared budget of a bad share", "budgets: [{name: p, pool: {selector: {}, sharePercent: 101}}]\nclasses: []\n",
			[]string{`budget "p"`, "sharePercent 101"}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := flags.ParseClassesConfig([]byte(tc.file))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// manyOverrides is n consumerLimits entries, each a consumer of its own.
func manyOverrides(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("{consumer: c%d, limits: {cpu: 1}}", i)
	}
	return strings.Join(out, ", ")
}
