package budget

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// WithCohort makes the budget a member of the cohort named name (New
// only): budgets of one cohort lend each other what they leave idle
// (Kueue's cohorts, with partial reclaim). A member's total is what it is
// guaranteed; its slices may hold more, borrowed from what the other
// members leave idle and may lend (WithBorrowingLimit,
// WithLendingLimit); and a member may take back what it lent when its own
// slices wait (WithReclaimWithinCohort), by shrinking the borrowers'
// slices, never by evicting them. Per resource, for a member b with total
// T, lending limit L (all of T when absent), guaranteed part G = T − L and
// borrowing limit B (unbounded when absent), an offer of b fits while
// what b's slices hold stays within T + B, and what they hold beyond G,
// with what the other members hold beyond theirs, stays within the sum of
// the members' L. So a cohort's slices never hold more than the sum of
// its totals by an admission, and what a member may not lend is never
// held by another member's slices.
//
// The cohort is a name, as a SliceBudget's spec.cohort is: the budget
// meets the members once a manager serves it (a class drawing from it is
// added), and its members are the budgets that manager serves naming the
// same cohort, Go-built or SliceBudgets, however their classes were
// registered. Until then, and in another manager, it is a budget on its
// own. Its status shows Borrowed (what its slices hold beyond its total)
// and Lent (what the others hold of it). A budget of one cohort may also
// be drawn from beside a budget in no cohort: a class's slice answers to
// every budget its class draws from, each by its own terms.
//
// It returns an error from New for a name that is not a DNS label (at
// most 63 lower-case letters, digits and '-'), as the API server refuses
// such a spec.cohort.
func WithCohort(name string) Option {
	return optionFunc(func(o *options) {
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			o.errs = append(o.errs, fmt.Errorf("cohort %q: %s", name, strings.Join(errs, "; ")))
			return
		}
		o.cohort = name
	})
}

// WithBorrowingLimit caps, per resource it names, how much more than its
// total the budget's slices may hold, borrowed from its cohort (a
// resource it does not name: no limit beyond what the cohort has idle).
// It needs WithCohort, and names only resources the total names.
func WithBorrowingLimit(limit corev1.ResourceList) Option {
	return optionFunc(func(o *options) {
		if len(limit) == 0 {
			o.errs = append(o.errs, errors.New("empty borrowing limit"))
			return
		}
		o.borrowing = limit.DeepCopy()
	})
}

// WithLendingLimit caps, per resource it names, how much of its total the
// other members of its cohort may borrow (a resource it does not name:
// all of it that is idle); the rest is guaranteed to the budget, never
// held by another member's slices. It needs WithCohort, names only
// resources the total names, and is at most the total.
func WithLendingLimit(limit corev1.ResourceList) Option {
	return optionFunc(func(o *options) {
		if len(limit) == 0 {
			o.errs = append(o.errs, errors.New("empty lending limit"))
			return
		}
		o.lending = limit.DeepCopy()
	})
}

// WithReclaimWithinCohort lets the budget take back what it lent when a
// slice of its own waits while the budget holds less than its total: the
// borrowers' slices (the lowest priority first; only those of strictly
// lower priority for v1alpha1.CohortReclaimLowerPriority) are shrunk by no
// more than the waiter lacks and never below their own budget's total, as
// WithPreemption shrinks them (reason ReasonReclaimed, a Warning event,
// their handlers' offers capped), and the waiter is admitted once their
// running pods fit. Taking back what was lent comes before WithPreemption's
// reclaim from the budget's own lower priorities. It needs WithCohort. The
// policy is the SliceBudget's own (spec.preemption.reclaimWithinCohort):
// v1alpha1.CohortReclaimNever (the default: wait until the borrowers
// release what was lent), v1alpha1.CohortReclaimLowerPriority or
// v1alpha1.CohortReclaimAny.
func WithReclaimWithinCohort(p v1alpha1.CohortReclaimPolicy) Option {
	return optionFunc(func(o *options) {
		switch p {
		case v1alpha1.CohortReclaimNever, v1alpha1.CohortReclaimLowerPriority, v1alpha1.CohortReclaimAny:
			o.reclaim = p
		default:
			o.errs = append(o.errs, fmt.Errorf("reclaim within cohort %q: want %s, %s or %s", p,
				v1alpha1.CohortReclaimNever, v1alpha1.CohortReclaimLowerPriority, v1alpha1.CohortReclaimAny))
		}
	})
}

// cohortOptions names the cohort options given, which New refuses
// without WithCohort.
func (o options) cohortOptions() []string {
	var out []string
	if o.cohort != "" {
		out = append(out, "WithCohort")
	}
	if o.borrowing != nil {
		out = append(out, "WithBorrowingLimit")
	}
	if o.lending != nil {
		out = append(out, "WithLendingLimit")
	}
	if o.reclaim != "" {
		out = append(out, "WithReclaimWithinCohort")
	}
	return out
}
