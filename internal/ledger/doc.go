// Package ledger is the admission ledger behind budget.Budget. It counts
// what the provider really grants, the way Kueue's scheduler cache counts
// admitted workloads: usage is what the cluster shows (each slice's Accepted
// status and Liqo's Quota for it, fed by watches), plus assumptions for the
// admissions whose writes are in flight, which the watch later confirms or
// drops. It also keeps the slices waiting for capacity. It is internal:
// users reach it through budget.Budget and resourceslice.WithBudget.
//
// What one slice holds, per resource:
//
//	held    = max(last Accepted status.resources, live Quota)   sticky: a Deny is not a release
//	counted = held (+ assumptions)            while the slice is served by an attached class
//	        = min(held at leave, held)        once it left them (it still holds what Liqo enforces)
//	        = nothing                         once it is deleted
//
// A Ledger composes three parts under its one mutex, in Kueue's shape
// (pkg/cache, pkg/queue, pkg/scheduler/preemption):
//
//   - the books (books.go; inuse.go for running pods, undecided.go for a
//     new leader's hold): what the cluster shows each slice holds, the sums,
//     the tombstones, and the attempts assumed before their writes (assume,
//     then confirm by an observation, or forget);
//   - the waiting line (line.go; fair.go for fair order): the slices that
//     did not fit, by priority, then in fair order, and what is promised
//     to them;
//   - the planner (planner.go): which slices yield how much to a waiter
//     of higher priority, a smaller total or a lower consumer limit,
//     chosen over the books and changing nothing.
//
// The Ledger's own files join them: admit.go admits (AdmitAll, Done,
// Leave), judging each request by the fit check of fit.go; observe.go
// feeds the books; reclaim.go applies the planner's cuts; wake.go promises
// what frees to the line and wakes classes after the lock is released;
// settings.go, evict.go, snapshot.go and bind.go are the budget's run-time
// settings, evictions, status figures and manager binding; cohort.go
// joins ledgers into a cohort that lends what its members leave idle
// (under one shared lock), and reclaimcohort.go takes back what was lent.
package ledger
