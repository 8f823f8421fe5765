// Package budget gives a class, or several classes together, a finite
// capacity: "gold gets at most 64 CPU in total".
//
// A Budget is an in-process ledger. Attach it to a class with
// resourceslice.WithBudget; several classes registered in one manager may
// draw from the same Budget (a cohort sharing one quota). The handler
// decides as usual and may read Free to shape its offer; when it accepts,
// the SDK admits the offer (status.resources) only if it fits what the
// budget has free, atomically across every worker and every class sharing
// the budget, and otherwise writes the slice Denied with reason
// ReasonExhausted. Admissions count from the moment they are reserved, not
// from the moment the cache sees them, so a lagging cache never lets two
// slices take the same capacity.
//
// What an Accepted slice holds returns to the budget when the slice is
// deleted, denied (by the handler, the tenant rule or anything else),
// offered less, or leaves the class; a refused write returns its
// reservation. Slices waiting with ReasonExhausted are re-evaluated oldest
// first when capacity frees; one that still does not fit does not block
// smaller ones behind it. No finalizer is ever set: a replicated slice is
// never kept from deletion.
//
// A Budget lives in one manager: after the cache syncs, it rebuilds usage
// from the Accepted slices of its classes before admitting anything, so a
// restart or a new leader starts from what the cluster holds. Two managers
// (two processes) must not share one budget's capacity: each would admit
// against its own ledger.
package budget
