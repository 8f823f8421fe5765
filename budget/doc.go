// Package budget gives a class, or several classes together, a finite
// capacity: "gold gets at most 64 CPU in total".
//
// Attach a Budget to a class with resourceslice.WithBudget; several classes
// registered in one manager may draw from the same Budget (a cohort sharing
// one quota). The handler decides as usual and may read Free to shape its
// offer; when it accepts, the SDK admits the offer (status.resources) only
// if it fits what the budget has free, atomically across every worker and
// every class sharing the budget.
//
// # What a budget counts
//
// A budget counts what the provider really grants, as the cluster shows
// it, not what the SDK last wrote. For each slice of its classes it counts,
// per resource, the larger of the slice's Accepted status.resources and
// what Liqo's Quota for the slice enforces (when the API server serves
// Liqo's offloading.liqo.io Quota CRD), until the slice is deleted. The
// manager's informers feed it; an admission whose write is in flight, or
// whose answer was lost, is assumed until the watch shows whether it was
// applied. So a restart, a new leader, another writer or a lost answer
// neither over-commits nor leaks capacity.
//
// In Liqo v1.2.0 a denial after an acceptance is not a revocation: Liqo
// keeps the slice's Quota and the consumer's virtual node as they were. A
// budget therefore keeps counting what a slice was granted after it is
// denied (by the handler, the tenant rule or Liqo), until the slice is
// deleted or accepted again with less and Liqo's Quota follows. Likewise a
// slice that leaves the budget's classes keeps counting, at most what it
// held when it left, while the cluster shows it holds it.
//
// # When an offer does not fit
//
// A slice not yet Accepted is written Denied with reason ReasonExhausted
// (or ReasonConsumerLimit, or ReasonUnavailable for a budget that admits
// nothing new); the message names each short resource with what was asked
// and what would have to change. An Accepted slice whose handler now offers
// more than is free keeps its current offer: it stays Accepted, its
// condition message and a Warning event name what is short, and the larger
// offer waits. A waiting slice's condition follows what blocks it in kind
// (the reason, the limit, the short resources, what would have to change):
// when that changes, it is decided again and says so. Figures that move
// with other slices (what is free, used or promised) are not in its
// message, so that they cost no write on waiting slices: they are in the
// SliceBudget's status and the metrics. When
// capacity frees it is promised to the waiting slices that fit, fair by
// consumer (the consumer holding the least, by its dominant share, first;
// oldest first within one consumer), or in plain creation order with
// WithOldestFirst; they are woken to take it, and one that does not fit
// does not block smaller ones behind it. No finalizer is ever set: a
// replicated slice is never kept from deletion.
//
// # Cohorts: borrowing between budgets
//
// Budgets built with WithCohort lend each other what they leave idle: a
// budget's total is what it is guaranteed, WithBorrowingLimit and
// WithLendingLimit bound what it borrows and lends, and
// WithReclaimWithinCohort takes back what it lent when its own slices wait,
// by shrinking the borrowers' slices (never below their own totals) as
// WithPreemption does. Borrowed and Lent say who holds what of whom. The
// cohort is a name: a budget meets the budgets naming it that its manager
// serves, SliceBudgets included. See WithCohort and docs/cohorts.md.
//
// # A budget as an object
//
// FromObject returns a Budget that follows a SliceBudget object
// (sliceclass.io/v1alpha1): its total or node pool, preemption, eviction
// delay and consumer limits are read from the object and applied within a
// second of an edit, and the leader writes the object's status (how full,
// who holds what, who waits) and records events on it for reclaims and a
// capacity below what is held.
//
// A Budget lives in one manager (the leader). Two managers (two processes)
// must not share one budget's capacity: each would admit against its own
// ledger.
package budget
