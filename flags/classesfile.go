package flags

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/classname"
)

// The bounds a SliceBudget's schema puts on consumerLimits
// (api/v1alpha1): a classes file's budget rules take no more.
const (
	maxConsumerLimits = 256
	maxConsumerLength = 253
)

// ClassesConfig is a --classes-file: the chart's values.yaml classes,
// rendered verbatim. The file is either a YAML list of classes
// (ClassEntry):
//
//   - name: platinum
//     caps: {cpu: "8"}
//     sliceBudget: premium
//     priority: 100
//   - name: gold
//     caps: {cpu: "4", memory: 8Gi}
//     budget: {cpu: "64", memory: 256Gi}
//     consumerLimit: {cpu: "16"}
//   - name: gpu
//     pool: {selector: {pool: gpu}, resources: [nvidia.com/gpu, cpu, memory], reserve: {cpu: "2"}, sharePercent: 90}
//     consumerLimit: {nvidia.com/gpu: "2"}
//   - name: silver
//
// or an object that also declares budgets shared by several classes
// (BudgetEntry), which a class names in budgets:
//
//	budgets:
//	  - name: provider
//	    pool: {selector: {}, resources: [cpu, memory]}
//	    consumerLimit: {cpu: "32"}
//	    consumerLimits: [{consumer: acme, limits: {cpu: "64"}}]
//	    preemption: {withinBudget: LowerPriority}
//	    evictionAfterSeconds: 600
//	classes:
//	  - {name: gold, caps: {cpu: "8"}, budget: {cpu: "64"}, budgets: [provider], priority: 10}
//	  - {name: silver, caps: {cpu: "2"}, budgets: [provider]}
//
// A budget's rules have the shapes, meanings and refusals of a
// SliceBudget's spec (v1alpha1.SliceBudgetSpec): preemption is
// {withinBudget: Never|LowerPriority}, evictionAfterSeconds a count of
// seconds (0 evicts at once), consumerLimits a list with one entry per
// consumer. ParseClassesConfig reads it; ClassBuilder turns it into each
// class's registration options.
type ClassesConfig struct {
	// Budgets are the budgets shared by several classes, by name.
	Budgets []BudgetEntry `json:"budgets,omitempty"`
	// Classes are the classes to serve.
	Classes []ClassEntry `json:"classes"`
}

// ClassEntry is one class of a classes file.
//
// A class's budget rules have one home. sliceBudget names a SliceBudget
// object (sliceclass.io/v1alpha1) the class draws from, through a budget
// built with budget.FromObject, which follows the object's spec live and
// writes its status; classes naming the same object share that one budget.
// Its total or node pool, consumer limits, preemption and eviction are the
// object's spec and only there: an entry naming a sliceBudget that also sets
// budget, pool, consumerLimit, consumerLimits, preemption or
// evictionAfterSeconds is refused, naming the field, rather than one of the
// two winning in silence.
//
// Otherwise budget (a fixed total) or pool (a node pool's) is the class's
// own budget, named after the class, which consumerLimit, consumerLimits,
// preemption and evictionAfterSeconds configure as they do a shared budget
// (BudgetEntry).
//
// What only the file says, beside any of these: priority, the class's
// priority in every budget it draws from (resourceslice.WithPriority; a
// SliceBudget has none); budgets, the file's shared budgets it also draws
// from (an offer is admitted only where it fits every one, each under its
// own rules); and caps, which the SDK does not read: they are for a handler
// that caps what it offers (examples/cappedresources).
type ClassEntry struct {
	// Name is the class.
	Name string `json:"name"`
	// Caps are the handler's caps (ClassConfig.Entry.Caps): quantities
	// that are not negative. The SDK's options do not carry them.
	Caps corev1.ResourceList `json:"caps,omitempty"`
	// SliceBudget names the SliceBudget object the class draws from.
	SliceBudget string `json:"sliceBudget,omitempty"`
	// Budget is the total of a budget of the class's own.
	Budget corev1.ResourceList `json:"budget,omitempty"`
	// Pool is a node pool of the class's own.
	Pool *PoolEntry `json:"pool,omitempty"`
	// ConsumerLimit limits what one consumer holds of the class's own
	// budget (budget.WithConsumerLimit).
	ConsumerLimit corev1.ResourceList `json:"consumerLimit,omitempty"`
	// ConsumerLimits override ConsumerLimit per consumer (cluster ID),
	// one entry per consumer (Budget.SetConsumerLimit), as a SliceBudget's
	// spec.consumerLimits does.
	ConsumerLimits []v1alpha1.ConsumerLimitOverride `json:"consumerLimits,omitempty"`
	// Preemption is the class's own budget's preemption policy: with
	// withinBudget LowerPriority, it shrinks lower-priority slices for a
	// higher-priority waiter (budget.WithPreemption); Never, or unset, it
	// preempts nothing.
	Preemption *v1alpha1.SliceBudgetPreemption `json:"preemption,omitempty"`
	// EvictionAfterSeconds evicts what a shrunk slice's consumer still
	// runs beyond its grant this many seconds after the shrink
	// (budget.WithEvictionAfter); 0 evicts as soon as it is seen, unset
	// never.
	EvictionAfterSeconds *int32 `json:"evictionAfterSeconds,omitempty"`
	// Budgets names shared budgets of the file the class also draws from.
	Budgets []string `json:"budgets,omitempty"`
	// Priority is the class's priority in every budget it draws from.
	Priority int32 `json:"priority,omitempty"`
}

// BudgetEntry is a budget of a classes file: a fixed total or a node pool,
// with an optional per-consumer limit (budget.WithConsumerLimit),
// per-consumer overrides of it (consumerLimits, Budget.SetConsumerLimit: a
// change is applied to the running budget, which is not rebuilt),
// preemption ({withinBudget: LowerPriority}, budget.WithPreemption) and
// evictionAfterSeconds, a count of seconds such as 600
// (budget.WithEvictionAfter: the manager then needs delete on
// shadowpods.offloading.liqo.io). They mean what a SliceBudget's spec
// fields of the same names mean, and are refused where it is.
type BudgetEntry struct {
	// Name is the budget's, which its metrics carry.
	Name string `json:"name"`
	// Total is a fixed total; exclusive with Pool.
	Total corev1.ResourceList `json:"total,omitempty"`
	// Pool is a node pool; exclusive with Total.
	Pool *PoolEntry `json:"pool,omitempty"`
	// ConsumerLimit limits what one consumer holds.
	ConsumerLimit corev1.ResourceList `json:"consumerLimit,omitempty"`
	// ConsumerLimits override ConsumerLimit per consumer, one entry per
	// consumer (cluster ID).
	ConsumerLimits []v1alpha1.ConsumerLimitOverride `json:"consumerLimits,omitempty"`
	// Preemption: see ClassEntry.Preemption.
	Preemption *v1alpha1.SliceBudgetPreemption `json:"preemption,omitempty"`
	// EvictionAfterSeconds: see ClassEntry.EvictionAfterSeconds.
	EvictionAfterSeconds *int32 `json:"evictionAfterSeconds,omitempty"`
}

// PoolEntry is a node-pool budget (budget.NewNodePool): the Ready,
// schedulable nodes whose labels match Selector ({} for every node), for
// Resources (default cpu, memory, pods), SharePercent of them (default
// 100), minus Reserve and, with LocalPods, the provider's own pods'
// requests. The manager then needs list and watch on nodes (and on pods
// with LocalPods).
type PoolEntry struct {
	// Selector selects the pool's nodes by label.
	Selector map[string]string `json:"selector"`
	// Resources are the resources the pool counts.
	Resources []corev1.ResourceName `json:"resources,omitempty"`
	// Reserve is kept back from the nodes' allocatable.
	Reserve corev1.ResourceList `json:"reserve,omitempty"`
	// SharePercent is the share of the nodes offered, 1–100.
	SharePercent int `json:"sharePercent,omitempty"`
	// LocalPods subtracts the provider's own pods' requests.
	LocalPods bool `json:"localPods,omitempty"`
}

// OwnBudget returns the class's own budget (from budget or pool and their
// rules), named after the class, if the entry gives one.
func (e ClassEntry) OwnBudget() (BudgetEntry, bool) {
	if e.Budget == nil && e.Pool == nil {
		return BudgetEntry{}, false
	}
	return BudgetEntry{Name: e.Name, Total: e.Budget, Pool: e.Pool, ConsumerLimit: e.ConsumerLimit,
		ConsumerLimits: e.ConsumerLimits, Preemption: e.Preemption, EvictionAfterSeconds: e.EvictionAfterSeconds}, true
}

// readClassesConfig reads and parses the classes file at path
// (ParseClassesConfig); its errors name the file.
func readClassesConfig(path string) (ClassesConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ClassesConfig{}, fmt.Errorf("reading --classes-file: %w", err)
	}
	cfg, err := ParseClassesConfig(data)
	if err != nil {
		return ClassesConfig{}, fmt.Errorf("--classes-file %s: %w", path, err)
	}
	return cfg, nil
}

// ParseClassesConfig parses a classes file: a YAML list of ClassEntry, or
// a ClassesConfig object. It refuses an empty file (a half-written file
// must not stop every class; an explicit [] serves none), unknown fields
// (a typo must not be ignored), the budget rules' old shapes (preemption: a
// bool, evictionAfter, consumerLimits: a map; the error gives the new one),
// a repeated or invalid class or budget name, negative caps or budgets, a
// bad node pool, a consumer named twice in consumerLimits or with no
// limits, an unknown preemption policy, a negative evictionAfterSeconds, a
// consumer limit, preemption or eviction without a budget of the class's
// own, a class naming a budget
// the file does not declare, and a sliceBudget that is not an object name
// or comes with what the object's spec says. Each error names the entry and
// the field. It never builds a budget: ClassBuilder does.
func ParseClassesConfig(data []byte) (ClassesConfig, error) {
	var cfg ClassesConfig
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, errors.New("the file is empty (write [] to serve no class)")
	}
	var shape any
	if err := yaml.Unmarshal(data, &shape); err != nil {
		return cfg, err
	}
	switch m := shape.(type) {
	case []any:
		if err := oldShapes(nil, m); err != nil {
			return cfg, err
		}
		if err := yaml.UnmarshalStrict(data, &cfg.Classes); err != nil {
			return cfg, entryError(nil, m, err)
		}
	case map[string]any:
		if _, ok := m["classes"]; !ok {
			return cfg, errors.New("the file has no classes (write classes: [] to serve none)")
		}
		budgets, _ := m["budgets"].([]any)
		classes, _ := m["classes"].([]any)
		if err := oldShapes(budgets, classes); err != nil {
			return cfg, err
		}
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			return cfg, entryError(budgets, classes, err)
		}
	default:
		return cfg, errors.New("the file is neither a list of classes nor {budgets, classes}")
	}
	if cfg.Classes == nil {
		cfg.Classes = []ClassEntry{}
	}
	return cfg, cfg.validate()
}

// oldShapes refuses the budget rules' shapes from before they became a
// SliceBudget's (issue 44), saying the new one, where a strict decoding
// would say only "unknown field" or "cannot unmarshal": the first entry,
// budgets before classes, with one of them, by name and position.
func oldShapes(budgets, classes []any) error {
	for i, e := range budgets {
		if err := oldShape(e); err != nil {
			return fmt.Errorf("budget %s(entry %d): %w", entryName(e), i+1, err)
		}
	}
	for i, e := range classes {
		if err := oldShape(e); err != nil {
			return fmt.Errorf("class %s(entry %d): %w", entryName(e), i+1, err)
		}
	}
	return nil
}

// oldShape is the error for the first old shape of a budget rule in entry,
// as decoded from YAML, or nil.
func oldShape(entry any) error {
	m, ok := entry.(map[string]any)
	if !ok {
		return nil
	}
	if p, ok := m["preemption"].(bool); ok {
		policy := v1alpha1.PreemptionNever
		if p {
			policy = v1alpha1.PreemptionLowerPriority
		}
		return fmt.Errorf("preemption: %t: preemption is {withinBudget: %s} now, as in a SliceBudget's spec", p, policy)
	}
	if d, ok := m["evictionAfter"]; ok {
		return fmt.Errorf("evictionAfter: %v: evictionAfter is evictionAfterSeconds now, a count of seconds as in a SliceBudget's spec (10m is evictionAfterSeconds: 600)", d)
	}
	if c, ok := m["consumerLimits"].(map[string]any); ok {
		example := "consumer: acme"
		if len(c) > 0 {
			// The first by name: the example only shows the shape.
			example = "consumer: " + slices.Sorted(maps.Keys(c))[0]
		}
		return fmt.Errorf("consumerLimits: a map of consumers is a list now, one entry per consumer, as in a SliceBudget's spec: consumerLimits: [{%s, limits: {...}}]", example)
	}
	return nil
}

// entryError says which entry err, the file's decoding error, is about:
// the first budget or class entry that does not decode alone, by name and
// position. Without one (the error is about the file's shape), err.
func entryError(budgets, classes []any, err error) error {
	for i, e := range budgets {
		if bad := decodeEntry(e, &BudgetEntry{}); bad != nil {
			return fmt.Errorf("budget %s(entry %d): %w", entryName(e), i+1, bad)
		}
	}
	for i, e := range classes {
		if bad := decodeEntry(e, &ClassEntry{}); bad != nil {
			return fmt.Errorf("class %s(entry %d): %w", entryName(e), i+1, bad)
		}
	}
	return err
}

// decodeEntry decodes one entry, as decoded from YAML, strictly into into.
func decodeEntry(entry, into any) error {
	raw, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(raw, into)
}

// entryName is an entry's name, quoted and followed by a space, or "".
func entryName(entry any) string {
	if m, ok := entry.(map[string]any); ok {
		if n, ok := m["name"].(string); ok {
			return fmt.Sprintf("%q ", n)
		}
	}
	return ""
}

// validate checks cfg as ParseClassesConfig says.
func (cfg ClassesConfig) validate() error {
	shared := map[string]bool{}
	for i, b := range cfg.Budgets {
		if b.Name == "" {
			return fmt.Errorf("budget entry %d: no name", i+1)
		}
		if shared[b.Name] {
			return fmt.Errorf("budget entry %d: budget %q given twice", i+1, b.Name)
		}
		shared[b.Name] = true
		if b.Total == nil && b.Pool == nil {
			return fmt.Errorf("budget %q: give a total or a pool", b.Name)
		}
		if err := validateBudget(b); err != nil {
			return fmt.Errorf("budget %q: %w", b.Name, err)
		}
	}
	// The budgets the file builds, by the name their metrics carry: a
	// SliceBudget's must not share them.
	named := maps.Clone(shared)
	for _, s := range cfg.Classes {
		if _, ok := s.OwnBudget(); ok {
			named[s.Name] = true
		}
	}
	seen := map[string]bool{}
	for i, s := range cfg.Classes {
		if err := classname.Validate(s.Name); err != nil {
			return fmt.Errorf("entry %d: %w", i+1, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("entry %d: class %q given twice", i+1, s.Name)
		}
		seen[s.Name] = true
		if err := validateClass(s, shared); err != nil {
			return fmt.Errorf("class %q: %w", s.Name, err)
		}
		if s.SliceBudget != "" && named[s.SliceBudget] {
			return fmt.Errorf("class %q: sliceBudget %q: the file builds a budget of that name too, and the two would share one set of metric series: rename one", s.Name, s.SliceBudget)
		}
	}
	return nil
}

// validateClass checks one class against the shared budgets' names.
func validateClass(s ClassEntry, shared map[string]bool) error {
	for n, q := range s.Caps {
		if err := checkQuantity(q); err != nil {
			return fmt.Errorf("caps: %s: %w", n, err)
		}
	}
	if err := validateSliceBudget(s); err != nil {
		return err
	}
	if own, ok := s.OwnBudget(); ok {
		if shared[own.Name] {
			// Two live budgets of one name would share one set of metric
			// series.
			return fmt.Errorf("its own budget is named after the class, and a shared budget of the file has that name %q: rename one", own.Name)
		}
		if err := validateBudget(own); err != nil {
			return err
		}
	} else if rules := budgetRules(s); len(rules) > 0 {
		return fmt.Errorf("%s: these apply to the class's own budget or pool: give one, or set them on a shared budget", strings.Join(rules, ", "))
	}
	named := map[string]bool{}
	for _, n := range s.Budgets {
		switch {
		case !shared[n]:
			return fmt.Errorf("budgets: %q is not among the file's budgets", n)
		case named[n]:
			return fmt.Errorf("budgets: %q given twice", n)
		}
		named[n] = true
	}
	return nil
}

// budgetRules names the rules of the class's own budget the entry sets.
func budgetRules(s ClassEntry) []string {
	var set []string
	if s.ConsumerLimit != nil {
		set = append(set, "consumerLimit")
	}
	if s.ConsumerLimits != nil {
		set = append(set, "consumerLimits")
	}
	if s.Preemption != nil {
		set = append(set, "preemption")
	}
	if s.EvictionAfterSeconds != nil {
		set = append(set, "evictionAfterSeconds")
	}
	return set
}

// validateSliceBudget checks a class's sliceBudget: an object's name, and
// nothing beside it that the object's spec says (a budget or pool of the
// class's own, consumer limits, preemption, eviction): the object wins by
// being the only place they can be said.
func validateSliceBudget(s ClassEntry) error {
	if s.SliceBudget == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(s.SliceBudget); len(errs) > 0 {
		return fmt.Errorf("sliceBudget %q is not an object name: %s", s.SliceBudget, strings.Join(errs, "; "))
	}
	if s.Budget != nil || s.Pool != nil {
		return fmt.Errorf("sliceBudget %q and budget or pool are exclusive: a class's budget is the SliceBudget or its own, not both (set total or nodePool in the SliceBudget's spec)", s.SliceBudget)
	}
	if rules := budgetRules(s); len(rules) > 0 {
		return fmt.Errorf("sliceBudget %q: %s of a SliceBudget are in its spec, not in the file: edit the object (kubectl edit sb %s)", s.SliceBudget, strings.Join(rules, ", "), s.SliceBudget)
	}
	return nil
}

// checkQuantity refuses a negative quantity, and one beyond the largest
// integer a Quantity holds exactly (where it prints as another value).
func checkQuantity(q resource.Quantity) error {
	switch {
	case q.Sign() < 0:
		return fmt.Errorf("negative quantity %s", q.String())
	case q.Cmp(maxQuantity) > 0:
		return fmt.Errorf("larger than %s", maxQuantity.String())
	}
	return nil
}

// budgetOptions are the options of b's rules (not its pool's), which
// budget.New and budget.NewNodePool both take (forNew, forPool).
func budgetOptions(b BudgetEntry) []budget.SharedOption {
	var opts []budget.SharedOption
	if b.ConsumerLimit != nil {
		opts = append(opts, budget.WithConsumerLimit(b.ConsumerLimit))
	}
	if preempts(b.Preemption) {
		opts = append(opts, budget.WithPreemption())
	}
	if n := b.EvictionAfterSeconds; n != nil && *n >= 0 {
		opts = append(opts, budget.WithEvictionAfter(evictionAfter(*n)))
	}
	return opts
}

// forNew and forPool are opts as budget.New and budget.NewNodePool take
// them.
func forNew(opts []budget.SharedOption) []budget.Option {
	out := make([]budget.Option, 0, len(opts))
	for _, o := range opts {
		out = append(out, o)
	}
	return out
}

func forPool(opts []budget.SharedOption) []budget.NodePoolOption {
	out := make([]budget.NodePoolOption, 0, len(opts))
	for _, o := range opts {
		out = append(out, o)
	}
	return out
}

// preempts reports whether the policy p lets a waiter reclaim from lower
// priorities: unset, as {} (the CRD's default, Never), it does not.
func preempts(p *v1alpha1.SliceBudgetPreemption) bool {
	return p != nil && p.WithinBudget == v1alpha1.PreemptionLowerPriority
}

// evictionAfter is budget.WithEvictionAfter's d for evictionAfterSeconds,
// as a SliceBudget's spec has it: that many seconds, and for 0 the least
// delay WithEvictionAfter takes (it refuses 0), so that a shrunk slice's
// pods are evicted as soon as they are seen using more than it keeps.
func evictionAfter(seconds int32) time.Duration {
	if seconds == 0 {
		return time.Nanosecond
	}
	return time.Duration(seconds) * time.Second
}

// consumerLimits are b's per-consumer overrides by consumer; b's list is
// valid (validateBudget): no consumer is named twice.
func consumerLimits(b BudgetEntry) map[string]corev1.ResourceList {
	if b.ConsumerLimits == nil {
		return nil
	}
	m := make(map[string]corev1.ResourceList, len(b.ConsumerLimits))
	for _, o := range b.ConsumerLimits {
		m[o.Consumer] = o.Limits.ResourceList()
	}
	return m
}

// validateBudget checks what building b would check, without a manager.
func validateBudget(b BudgetEntry) error {
	opts := budgetOptions(b)
	if p := b.Preemption; p != nil {
		switch p.WithinBudget {
		case "", v1alpha1.PreemptionNever, v1alpha1.PreemptionLowerPriority:
		default:
			return fmt.Errorf("preemption: withinBudget %q is not a policy: write Never or LowerPriority", p.WithinBudget)
		}
		// A classes file's budget is in no cohort: a cohort's terms are a
		// SliceBudget's (spec.cohort), so the rule would never apply.
		if p.ReclaimWithinCohort != "" {
			return fmt.Errorf("preemption: reclaimWithinCohort %q: a classes file's budget is in no cohort; a cohort and its rule are a SliceBudget's (sliceBudget: NAME)", p.ReclaimWithinCohort)
		}
	}
	if n := b.EvictionAfterSeconds; n != nil && *n < 0 {
		return fmt.Errorf("evictionAfterSeconds: %d is negative: write 0 to evict at once, or leave it out never to evict", *n)
	}
	if n := len(b.ConsumerLimits); n > maxConsumerLimits {
		return fmt.Errorf("consumerLimits: %d entries, more than the %d a SliceBudget takes", n, maxConsumerLimits)
	}
	consumers := map[string]bool{}
	for i, o := range b.ConsumerLimits {
		c := o.Consumer
		switch {
		case c == "":
			return fmt.Errorf("consumerLimits: entry %d: no consumer", i+1)
		case len(c) > maxConsumerLength:
			return fmt.Errorf("consumerLimits: entry %d: consumer of %d characters, more than the %d a SliceBudget takes", i+1, len(c), maxConsumerLength)
		case consumers[c]:
			return fmt.Errorf("consumerLimits: consumer %q given twice: one entry per consumer", c)
		case len(o.Limits) == 0:
			return fmt.Errorf("consumerLimits: consumer %q: its limits name no resource (remove the entry to fall back to consumerLimit)", c)
		}
		consumers[c] = true
		for n, q := range o.Limits {
			if q.Sign() < 0 {
				return fmt.Errorf("consumerLimits: %s: negative %s=%s", c, n, q.String())
			}
		}
	}
	if b.Pool == nil {
		if _, err := budget.New(b.Name, b.Total, forNew(opts)...); err != nil {
			return fmt.Errorf("budget: %w", err)
		}
		return nil
	}
	if b.Total != nil {
		return errors.New("budget and pool are exclusive: a pool's total follows its nodes")
	}
	p := b.Pool
	if p.Selector == nil {
		return errors.New("pool: no selector (write selector: {} for every node)")
	}
	if _, err := labels.ValidatedSelectorFromSet(p.Selector); err != nil {
		return fmt.Errorf("pool: selector: %w", err)
	}
	if p.SharePercent != 0 && (p.SharePercent < 1 || p.SharePercent > 100) {
		return fmt.Errorf("pool: sharePercent %d is not within 1–100", p.SharePercent)
	}
	if p.Resources != nil && len(p.Resources) == 0 {
		return errors.New("pool: resources names no resource (omit it for cpu, memory, pods)")
	}
	// The pool's total names its resources; a budget over them at zero
	// checks the names and the consumer limit as the pool's ledger will.
	zero := corev1.ResourceList{}
	for _, n := range p.resources() {
		if _, dup := zero[n]; dup {
			return fmt.Errorf("pool: resource %s given twice", n)
		}
		zero[n] = resource.Quantity{}
	}
	for n, q := range p.Reserve {
		if q.Sign() < 0 {
			return fmt.Errorf("pool: negative reserve %s=%s", n, q.String())
		}
	}
	if _, err := budget.New(b.Name, zero, forNew(opts)...); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	return nil
}

// resources are the resources the pool counts.
func (p *PoolEntry) resources() []corev1.ResourceName {
	if p.Resources == nil {
		return []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}
	}
	return p.Resources
}

// options are the pool's budget options.
func (p *PoolEntry) options() []budget.NodePoolOption {
	opts := []budget.NodePoolOption{budget.WithResources(p.resources()...)}
	if p.Reserve != nil {
		opts = append(opts, budget.WithReserve(p.Reserve))
	}
	if p.SharePercent != 0 {
		opts = append(opts, budget.WithSharePercent(p.SharePercent))
	}
	if p.LocalPods {
		opts = append(opts, budget.WithLocalPods())
	}
	return opts
}

// sameButLimits reports whether a and b build the same budget, apart from
// the per-consumer overrides, which a running budget follows.
func sameButLimits(a, b BudgetEntry) bool {
	a.ConsumerLimits, b.ConsumerLimits = nil, nil
	// Unset, {} and {withinBudget: Never} say one thing.
	if preempts(a.Preemption) == preempts(b.Preemption) {
		a.Preemption, b.Preemption = nil, nil
	}
	return equality.Semantic.DeepEqual(a, b)
}
