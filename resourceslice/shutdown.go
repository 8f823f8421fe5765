package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// What a class does when it stops, in one place.
//
// A manager that stops, or loses its leader election, cancels the context
// of its runnables; controller-runtime hands that context to every
// reconcile. A stopped leader must stop deciding at once, since another
// replica may already decide the same slices: the handler's context ends
// with the manager's, no handler call and no write start after it, and the
// one status patch already sent may still be answered for writeGrace. What
// the SDK runs beside its controllers (budget feeds, the evictor, class
// Leases, sweeps, passes, event handlers) ends with the same context and is
// waited for before the runnable that started it returns.
//
// ClassSet.Stop is not a loss of leadership: the process still leads, and
// a class stopped by it lets its decisions in flight finish and be written,
// until the manager stops or Stop's own context ends.

// writeGrace is how long a status patch already sent when its reconcile's
// context ends (the manager stopping, or ClassSet.Stop giving up) is left
// to be answered: long enough for an API server to answer a request it has,
// so the budget learns whether it was applied; short enough that a stopped
// leader's last write cannot land long after its successor started
// deciding. No patch is sent once the context has ended.
const writeGrace = 2 * time.Second

// errStopped: the reconcile's context ended (the controller stopping, or
// the manager's ReconciliationTimeout) before the step that returns it
// could start, or while the handler ran.
var errStopped = errors.New("the reconcile's context ended")

// stopped returns errStopped, with why the context ended, if ctx has
// ended; nil otherwise.
func stopped(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); !errors.Is(cause, err) {
		return fmt.Errorf("%w: %w (%w)", errStopped, err, cause)
	}
	return fmt.Errorf("%w: %w", errStopped, err)
}

// writeContext is the context of a status patch sent on ctx: it has ctx's
// values, and ends writeGrace after ctx ends (for whatever reason: the
// controller stopping, a ReconciliationTimeout), so that a patch already
// sent may be answered. cancel ends it, and whatever waits for that grace.
func writeContext(ctx context.Context) (_ context.Context, cancel context.CancelFunc) {
	wctx, cancelWrite := context.WithCancel(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() {
		t := time.NewTimer(writeGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelWrite()
		case <-wctx.Done(): // the write ended
		}
	})
	return wctx, func() {
		stopAfter()
		cancelWrite()
	}
}

// shutdownPolicy wraps the reconciler. The reconcile's context is the
// controller's: for AddToManager and setupWithManager the manager's, which
// ends when the manager stops or loses its leader election. A reconcile
// whose context has ended starts nothing (the handler is not called, no
// status is written) and returns no error: the decision is abandoned, and
// the next leader makes it.
//
// A class served by a ClassSet decides on a context its own Stop does not
// end, so that a decision in flight finishes and is written while the
// process still leads: it ends when the set's context ends (the manager
// stopping) or when Stop gives up waiting (abort); its deadline (the
// manager's ReconciliationTimeout) still applies.
func (cc *classController) shutdownPolicy() reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if cc.abort != nil {
			var cancel context.CancelFunc
			ctx, cancel = outliveStop(ctx, cc.abort)
			defer cancel()
		}
		if ctx.Err() != nil {
			return reconcile.Result{}, nil
		}
		res, err := cc.r.Reconcile(ctx, req)
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			// Stopping: what failed did so because the context ended, and
			// the queue is shutting down; a retry is for the next leader.
			log.FromContext(ctx).V(1).Info("the controller stopped while deciding; the decision is abandoned", "reason", err.Error())
			return reconcile.Result{}, nil
		}
		return res, err
	})
}

// outliveStop is a context with ctx's values and deadline that ends with
// abort rather than with ctx.
func outliveStop(ctx, abort context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if d, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		rctx, cancelDeadline = context.WithDeadline(rctx, d)
		inner := cancel
		cancel = func() { cancelDeadline(); inner() }
	}
	stop := context.AfterFunc(abort, cancel)
	return rctx, func() { stop(); cancel() }
}
