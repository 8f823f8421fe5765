// Package budgethook is how the SDK's unit-test harness (package testing)
// drives the runnables that a budget's classes and budget.FromObject add to
// a manager, which a manager runs on its own goroutines and clock: the
// feed of a budget, whose ledger's timers the harness runs itself; the
// follower of a SliceBudget's spec, whose events the harness captures; and
// the writer of its status, which the harness does not start and makes
// write when a test reads the status, so that what a test reads depends on
// its decisions only, never on a ticker.
package budgethook

import (
	"context"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Follower is the runnable that keeps a budget's settings equal to its
// SliceBudget's spec.
type Follower interface {
	manager.Runnable
	// UseEventRecorder makes the events on the SliceBudget go to rec
	// rather than to the manager's recorder. Call it before Start.
	UseEventRecorder(rec events.EventRecorder)
	// SpecRead is closed once the follower has read the object (applied
	// its spec, refused it, or found it missing) for the first time.
	SpecRead() <-chan struct{}
}

// StatusWriter is the runnable that writes a SliceBudget's status from the
// leader, at most once a second.
type StatusWriter interface {
	manager.Runnable
	// WriteStatus writes the status now if it differs from what the
	// object shows, as a tick of Start would; safe to call beside Start.
	WriteStatus(ctx context.Context) error
}

// Feed is the runnable that runs a budget's feed in the manager whose
// classes draw from the budget: the harness reaches the budget's ledger
// through it, to run the ledger's timers itself, and waits for the feed's
// initial lists before a test begins.
type Feed interface {
	manager.Runnable
	// Ledger is the budget's ledger.
	Ledger() *ledger.Ledger
	// WaitForSync blocks until the feed has delivered its initial lists
	// (the budget's books are counted), ctx ends or the feed stops.
	WaitForSync(ctx context.Context) error
}
