package budget

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// ReasonExhausted is the Resources condition reason of a slice denied for
// lack of budget. Its message names each short resource with what was asked
// and what is free.
const ReasonExhausted = "BudgetExhausted"

// Budget is a finite capacity shared by the classes that draw from it. It is
// safe for concurrent use; every method is cheap (no API call).
type Budget struct {
	l *ledger.Ledger
}

// New returns a Budget named name over total. The budget limits exactly
// the resources total names: a resource it does not name is not limited
// by it, and one named with zero admits none of it. It returns an error for
// an empty name, an empty total (it would limit nothing) or a negative
// quantity.
func New(name string, total corev1.ResourceList) (*Budget, error) {
	l, err := ledger.New(name, total)
	if err != nil {
		return nil, err
	}
	return &Budget{l: l}, nil
}

// Name returns the budget's name.
func (b *Budget) Name() string { return b.l.Name() }

// Total returns a copy of the capacity.
func (b *Budget) Total() corev1.ResourceList { return b.l.Total() }

// Used returns what the budget's slices hold, per limited resource, as the
// cluster shows it (their Accepted offers and Liqo's Quotas), plus the
// admissions whose writes are in flight or not yet seen by the watch.
func (b *Budget) Used() corev1.ResourceList { return b.l.Used() }

// Free returns, per resource in Total, total − used, never below zero.
func (b *Budget) Free() corev1.ResourceList { return b.l.Free() }

// SetTotal changes the capacity at run time (e.g. from node capacity). A
// resource the budget limits that total does not name becomes zero: it is
// never unlimited. Growing it re-evaluates waiting slices, oldest first.
// Shrinking it admits nothing new until usage fits, and never revokes an
// existing acceptance by itself. It returns an error, and keeps the old
// total, for a negative quantity or a resource the budget was not created
// with.
func (b *Budget) SetTotal(total corev1.ResourceList) error { return b.l.SetTotal(total) }

// Ledger is for sliceclass's own packages: it returns the admission ledger
// behind the budget. Users cannot call it (they cannot name its argument's
// type); they use resourceslice.WithBudget.
func (b *Budget) Ledger(ledger.Access) *ledger.Ledger { return b.l }
