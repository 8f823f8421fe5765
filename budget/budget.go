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

// New returns a Budget named name over total. Resources absent from total
// are not limited by it. It returns an error for an empty name or a
// negative quantity.
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

// Used returns what admitted slices hold, per limited resource, including
// admissions whose write the cache has not seen yet and writes in flight.
func (b *Budget) Used() corev1.ResourceList { return b.l.Used() }

// Free returns, per resource in Total, total − used, never below zero.
func (b *Budget) Free() corev1.ResourceList { return b.l.Free() }

// SetTotal changes the capacity at run time (e.g. from node capacity).
// Growing it re-evaluates waiting slices, oldest first. Shrinking it admits
// nothing new until usage fits, and never revokes an existing acceptance by
// itself: a slice keeps what it was granted until it is deleted, denied or
// offered less. It returns an error for a negative quantity and then keeps
// the old total.
func (b *Budget) SetTotal(total corev1.ResourceList) error { return b.l.SetTotal(total) }

// Ledger is for sliceclass's own packages: it returns the admission ledger
// behind the budget. Users cannot call it (they cannot name its argument's
// type); they use resourceslice.WithBudget.
func (b *Budget) Ledger(ledger.Access) *ledger.Ledger { return b.l }
