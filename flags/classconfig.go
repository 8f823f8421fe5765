package flags

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// ClassConfig is one class's whole configuration: what a main serves it
// with.
type ClassConfig struct {
	// Name is the class.
	Name string
	// Entry is the class's entry in the classes file as read (zero but for
	// the name with --class-name). Its Caps are for a handler that caps:
	// no option carries them.
	Entry ClassEntry
	// Budgets are the budgets the class draws from, each also in Options
	// (resourceslice.WithBudget).
	Budgets []*budget.Budget
	// Options serve the class as the file says: a WithBudget per budget
	// and, when the entry has a priority, WithPriority. From
	// Values.ClassConfigs they begin with the flags' ClassDefaults.
	Options []resourceslice.Option
}

// ClassConfigs returns every class to serve with its whole configuration,
// so that a main is one loop, and the chart's values (each class's
// priority, sliceBudget, budget or pool, consumer limits, shared budgets)
// drive it:
//
//	classes, err := v.ClassConfigs(mgr)
//	if err != nil { ... }
//	set, err := resourceslice.NewClassSet(mgr)
//	if err != nil { ... }
//	for _, c := range classes {
//		if err := set.Serve(c.Name, myPolicy, c.Options...); err != nil { ... }
//	}
//
// It checks the values first (Validate): no class flag, or both, is an
// error, never an empty list. With --class-name each class has the flags'
// ClassDefaults only. With
// --classes-file it reads the file once (ParseClassesConfig) and builds its
// budgets on mgr (a ClassBuilder): one budget per shared budget, per class
// budget or pool and per SliceBudget named, however many classes draw from
// it; each class's Options are ClassDefaults followed by its own. A bad file
// is an error naming the class (or budget) and the field; nothing is
// served. A manager that follows the file as it changes holds a
// ClassBuilder and builds again (examples/manager does).
func (v Values) ClassConfigs(mgr manager.Manager) ([]ClassConfig, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	if v.ClassesFile == "" {
		out := make([]ClassConfig, 0, len(v.ClassNames))
		for _, name := range v.ClassNames {
			out = append(out, ClassConfig{Name: name, Entry: ClassEntry{Name: name}, Options: v.ClassDefaults()})
		}
		return out, nil
	}
	cfg, err := readClassesConfig(v.ClassesFile)
	if err != nil {
		return nil, err
	}
	classes, err := NewClassBuilder(mgr).Build(cfg)
	if err != nil {
		return nil, fmt.Errorf("--classes-file %s: %w", v.ClassesFile, err)
	}
	for i := range classes {
		classes[i].Options = append(v.ClassDefaults(), classes[i].Options...)
	}
	return classes, nil
}

// ClassBuilder builds the classes of a classes file on a manager, and holds
// the budgets it built, so that a budget several classes draw from is built
// once, and building again (the file changed) reuses each budget whose
// entry did not change: its books, and what its slices hold, are kept.
// Build it once per manager, next to the manager, and call Build from one
// goroutine at a time.
type ClassBuilder struct {
	// NodePool builds a node-pool budget; NewClassBuilder sets
	// budget.NewNodePool on the manager. A test may stand in for it.
	NodePool func(name string, nodes labels.Selector, opts ...budget.NodePoolOption) (*budget.Budget, error)
	// FromObject builds the budget following the named SliceBudget;
	// NewClassBuilder sets budget.FromObject on the manager. A test may
	// stand in for it.
	FromObject func(name string) (*budget.Budget, error)

	// built are the budgets built from the file, by budgetKey.
	built map[string]builtBudget
	// objects are the budgets following SliceBudgets, by object name:
	// kept for the builder's life, since the object, not the file, is
	// their configuration, and a second budget following one object
	// would write its status too.
	objects map[string]*budget.Budget
}

// builtBudget is a budget built from the file, and the entry it was built
// from.
type builtBudget struct {
	entry BudgetEntry
	b     *budget.Budget
}

// NewClassBuilder returns a builder of classes on mgr. It makes no API call.
func NewClassBuilder(mgr manager.Manager) *ClassBuilder {
	return &ClassBuilder{
		NodePool: func(name string, nodes labels.Selector, opts ...budget.NodePoolOption) (*budget.Budget, error) {
			return budget.NewNodePool(mgr, name, nodes, opts...)
		},
		FromObject: func(name string) (*budget.Budget, error) { return budget.FromObject(mgr, name) },
		built:      map[string]builtBudget{},
		objects:    map[string]*budget.Budget{},
	}
}

// budgetKey tells a shared budget from a class's own of the same name.
func budgetKey(shared bool, name string) string {
	if shared {
		return "budgets/" + name
	}
	return "classes/" + name
}

// Build returns each class of cfg (a ParseClassesConfig result) in order,
// with the budgets it draws from and its options. Each budget is built
// once: a shared budget of the file (even one no class names: a pool's node
// watch starts with the file), a class's own budget or pool, and the
// budget following each SliceBudget named. A budget built by an earlier
// Build from an equal entry is reused, with its per-consumer overrides
// (consumerLimits) set to the new entry's; a budget the file no longer
// declares is dropped (a node pool's watch runs on until the process
// ends), but a SliceBudget's budget is kept. An error names the class or
// budget; the budgets of the earlier Build are then kept for the next.
func (b *ClassBuilder) Build(cfg ClassesConfig) ([]ClassConfig, error) {
	if b.built == nil || b.objects == nil || b.NodePool == nil || b.FromObject == nil {
		return nil, errors.New("class builder: not built with NewClassBuilder")
	}
	shared := map[string]BudgetEntry{}
	for _, e := range cfg.Budgets {
		shared[e.Name] = e
	}
	built := map[string]builtBudget{}
	out := make([]ClassConfig, 0, len(cfg.Classes))
	for _, s := range cfg.Classes {
		var budgets []*budget.Budget
		if s.SliceBudget != "" {
			bb, err := b.objectBudget(s.SliceBudget)
			if err != nil {
				return nil, fmt.Errorf("class %q: sliceBudget %q: %w", s.Name, s.SliceBudget, err)
			}
			budgets = append(budgets, bb)
		}
		if own, ok := s.OwnBudget(); ok {
			bb, err := b.budget(budgetKey(false, s.Name), own, built)
			if err != nil {
				return nil, fmt.Errorf("class %q: %w", s.Name, err)
			}
			budgets = append(budgets, bb)
		}
		for _, n := range s.Budgets {
			e, ok := shared[n]
			if !ok {
				return nil, fmt.Errorf("class %q: budgets: %q is not among the file's budgets", s.Name, n)
			}
			bb, err := b.budget(budgetKey(true, n), e, built)
			if err != nil {
				return nil, fmt.Errorf("budget %q: %w", n, err)
			}
			budgets = append(budgets, bb)
		}
		opts := make([]resourceslice.Option, 0, len(budgets)+1)
		for _, bb := range budgets {
			opts = append(opts, resourceslice.WithBudget(bb))
		}
		if s.Priority != 0 {
			opts = append(opts, resourceslice.WithPriority(s.Priority))
		}
		out = append(out, ClassConfig{Name: s.Name, Entry: s, Budgets: budgets, Options: opts})
	}
	for _, e := range cfg.Budgets {
		if _, err := b.budget(budgetKey(true, e.Name), e, built); err != nil {
			return nil, fmt.Errorf("budget %q: %w", e.Name, err)
		}
	}
	b.built = built
	return out, nil
}

// budget returns the budget built from e, reusing the one built before
// from the same entry; built collects what the file now declares.
func (b *ClassBuilder) budget(key string, e BudgetEntry, built map[string]builtBudget) (*budget.Budget, error) {
	if bb, ok := built[key]; ok {
		return bb.b, nil
	}
	if old, ok := b.built[key]; ok && sameButLimits(old.entry, e) {
		// Followed live: the running budget takes the new overrides.
		if err := setLimits(old.b, consumerLimits(old.entry), consumerLimits(e)); err != nil {
			return nil, err
		}
		built[key] = builtBudget{entry: e, b: old.b}
		return old.b, nil
	}
	opts := budgetOptions(e)
	var bb *budget.Budget
	var err error
	if e.Pool == nil {
		bb, err = budget.New(e.Name, e.Total, forNew(opts)...)
	} else {
		bb, err = b.NodePool(e.Name, labels.SelectorFromSet(e.Pool.Selector), append(forPool(opts), e.Pool.options()...)...)
	}
	if err != nil {
		return nil, err
	}
	if err := setLimits(bb, nil, consumerLimits(e)); err != nil {
		return nil, err
	}
	built[key] = builtBudget{entry: e, b: bb}
	return bb, nil
}

// objectBudget returns the budget following the SliceBudget name, building
// it the first time.
func (b *ClassBuilder) objectBudget(name string) (*budget.Budget, error) {
	if bb, ok := b.objects[name]; ok {
		return bb, nil
	}
	bb, err := b.FromObject(name)
	if err != nil {
		return nil, err
	}
	b.objects[name] = bb
	return bb, nil
}

// setLimits applies the per-consumer overrides want to b, which has was:
// changed ones are set, removed ones lifted.
func setLimits(b *budget.Budget, was, want map[string]corev1.ResourceList) error {
	var errs []error
	for c := range was {
		if _, keep := want[c]; !keep {
			errs = append(errs, b.SetConsumerLimit(c, nil))
		}
	}
	for c, lim := range want {
		if old, ok := was[c]; !ok || !equality.Semantic.DeepEqual(old, lim) {
			errs = append(errs, b.SetConsumerLimit(c, lim))
		}
	}
	return errors.Join(errs...)
}
