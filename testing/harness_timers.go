package slicetest

import (
	"context"
	"time"

	"github.com/sliceclass/sliceclass/internal/budgethook"
)

// The budgets' own timers. A budget re-checks its waiting slices on a
// timer after a change that may alter what blocks them; the harness has no
// clock, so it holds those timers and runs the re-checks itself when its
// queues are empty (ReconcilePending). What a budget's feed settles on its
// own goroutine is held too (heldSettles, ReadBackUnansweredWrites), and a
// SliceBudget's status is written when the test reads it (SliceBudget).

// holdBudgetTimers finds the feeds of the budgets the classes draw from
// among the runnables set up in mgr, and holds their ledgers' re-checks
// until the test ends.
func (h *Harness) holdBudgetTimers(mgr *harnessManager) {
	for _, r := range mgr.addedSince(0) {
		f, ok := r.(budgethook.Feed)
		if !ok {
			continue
		}
		h.feeds = append(h.feeds, f)
		h.t.Cleanup(f.Ledger().HoldRefreshes())
	}
}

// waitFeeds waits until each budget's feed has delivered its initial
// lists: the budgets count the seeded objects before the test begins.
func (h *Harness) waitFeeds() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, f := range h.feeds {
		if err := f.WaitForSync(ctx); err != nil {
			h.t.Fatalf("slicetest: %v", err)
		}
	}
}

// runBudgetRechecks runs every budget's pending re-check of its waiting
// slices, and reports whether there was one.
func (h *Harness) runBudgetRechecks() bool {
	ran := false
	for _, f := range h.feeds {
		if f.Ledger().RunPendingRefresh() {
			ran = true
		}
	}
	return ran
}
