package budget

import "errors"

// Options are typed by the constructors that take them, as
// controller-runtime's builder types ForOption and OwnsOption: an option
// a constructor cannot take does not compile there.
//
//	budget.New("gold", total, budget.WithCohort("pool"))          // Option
//	budget.NewNodePool(mgr, "pool", nodes, budget.WithLocalPods()) // NodePoolOption
//	budget.FromObject(mgr, "gold", budget.WithOldestFirst())       // ObjectOption
//	budget.FromObject(mgr, "gold", budget.WithPreemption())        // does not compile: spec.preemption says it
//
// Each With function returns the narrowest interface that every
// constructor it applies to accepts. The interfaces are sealed: their
// methods are unexported, so only this package's options implement them.

// Option configures a budget built with New.
type Option interface {
	applyToNew(*options)
}

// NodePoolOption configures a budget built with NewNodePool.
type NodePoolOption interface {
	applyToNodePool(*options)
}

// SharedOption is an option both New and NewNodePool take: a setting of
// a Go-built budget that a SliceBudget's spec holds instead (FromObject
// takes none of them).
type SharedOption interface {
	Option
	NodePoolOption
}

// ObjectOption configures a budget built with FromObject; every such
// option applies to New and NewNodePool too.
type ObjectOption interface {
	SharedOption
	applyToObject(*options)
}

// optionFunc is every option: what each With function returns, typed as
// the interface of the constructors it applies to.
type optionFunc func(*options)

func (f optionFunc) applyToNew(o *options)      { f(o) }
func (f optionFunc) applyToNodePool(o *options) { f(o) }
func (f optionFunc) applyToObject(o *options)   { f(o) }

var _ ObjectOption = optionFunc(nil)

// build applies opts (nil ones skipped) with apply over the defaults and
// returns the options and every option's error.
func build[T comparable](opts []T, apply func(T, *options)) (options, error) {
	o := options{share: defaultSharePercent}
	var none T
	for _, opt := range opts {
		if opt != none {
			apply(opt, &o)
		}
	}
	return o, errors.Join(o.errs...)
}
