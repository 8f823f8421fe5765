package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/budgethook"
	"github.com/sliceclass/sliceclass/internal/cohorts"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// What a budget holds in the one manager its classes run in hangs off the
// budget (its ledger's binding), not off the manager: its feed, one
// whatever the classes drawing, and two runnables added to the manager with
// it. The ShadowPods the feed counts come from the ShadowPod watch of the
// set of classes that drew first (Pods), shared with the set's other
// budgets. The first class that draws from the budget in a manager binds
// it there; a class of another manager is refused (ledger.ErrBoundElsewhere)
// until that manager stops. When the last class stops drawing, everything
// goes: the feed stops (letting go of the ShadowPod watch), the runnables
// return, the ledger forgets what the feed told it, and the budget is
// unbound; a budget replaced many times leaves nothing behind.

// Parts is a budget's feed in one manager.
type Parts struct {
	mgr manager.Manager
	l   *ledger.Ledger

	mu sync.Mutex
	// feed is the budget's feed while a class draws from it, and refs how
	// many classes do.
	feed *Feed
	refs int
	// run is the leader's context once the manager is elected, ended by
	// teardown: the feed runs on it.
	run       context.Context
	runCancel context.CancelFunc
	// closed is set by teardown (no class draws any more) or when the
	// manager stops; done is closed then, and the runnables return.
	closed  bool
	done    chan struct{}
	running sync.WaitGroup
}

// errPartsClosed: the parts were torn down between partsOf and acquire;
// the caller binds again.
var errPartsClosed = errors.New("the budget's parts were torn down")

// Acquire returns the feed of l in mgr, binding l to mgr when no class
// draws from it yet, and takes a reference the parts' release gives back.
// views, namespaces and pods are the status.class view, the namespace
// store and the ShadowPod watch of the set of classes that asks: the feed
// made here reads them while any class draws from the budget.
func Acquire(mgr manager.Manager, l *ledger.Ledger, views *sliceview.Classes, namespaces *sliceview.Namespaces, pods *Pods) (*Parts, *Feed, error) {
	for {
		p, err := partsOf(mgr, l)
		if err != nil {
			return nil, nil, err
		}
		f, err := p.acquire(views, namespaces, pods)
		if errors.Is(err, errPartsClosed) {
			continue // the last class let go meanwhile: the budget is unbound now
		}
		return p, f, err
	}
}

// partsOf returns what l holds in mgr, binding l to mgr on first use:
// from then on a budget that names a cohort (its SliceBudget's
// spec.cohort, budget.WithCohort) joins the cohort of that name among the
// manager's (internal/cohorts), where it meets every budget the manager
// serves naming it, whichever classes draw from them.
func partsOf(mgr manager.Manager, l *ledger.Ledger) (*Parts, error) {
	p, err := l.Bind(mgr, func() (any, error) {
		bp := &Parts{mgr: mgr, l: l, done: make(chan struct{})}
		if err := mgr.Add(lifetime{bp}); err != nil {
			return nil, fmt.Errorf("budget %q: adding it to the manager: %w", l.Name(), err)
		}
		// On error the parts close (their runnables return) and l stays
		// unbound; not teardown, which would Unbind under Bind's lock.
		if err := mgr.Add(feedRunner{bp}); err != nil {
			bp.close()
			return nil, fmt.Errorf("budget %q: adding its feed to the manager: %w", l.Name(), err)
		}
		if err := cohorts.Join(mgr, l); err != nil {
			bp.close()
			return nil, fmt.Errorf("budget %q: %w", l.Name(), err)
		}
		return bp, nil
	})
	if err != nil {
		return nil, err
	}
	return p.(*Parts), nil
}

// acquire returns the budget's feed, made on first use, and takes a
// reference that release gives back.
func (p *Parts) acquire(views *sliceview.Classes, namespaces *sliceview.Namespaces, pods *Pods) (*Feed, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		if p.refs == 0 && p.feed == nil && p.run == nil {
			return nil, errPartsClosed
		}
		return nil, fmt.Errorf("budget %q: the manager stopped", p.l.Name())
	}
	if p.feed != nil {
		p.refs++
		return p.feed, nil
	}
	f := newFeed(p.mgr, p.l, views, namespaces, pods)
	p.l.SetLogger(p.mgr.GetLogger().WithName("budget").WithValues("budget", p.l.Name()))
	p.feed, p.refs = f, 1
	if p.run != nil {
		p.goRun(f)
	}
	return f, nil
}

// Classes is how many classes draw from the budget now: the references
// Acquire took and Release has not given back.
func (p *Parts) Classes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refs
}

// Release gives back a reference Acquire took; the last one tears the
// parts down.
func (p *Parts) Release() {
	p.mu.Lock()
	if p.feed == nil {
		p.mu.Unlock()
		return
	}
	if p.refs--; p.refs > 0 {
		p.mu.Unlock()
		return
	}
	p.feed.stop() // its handlers leave the informers
	p.feed = nil
	p.l.ForgetAll() // the next feed counts the cluster again
	p.mu.Unlock()
	p.teardown()
}

// teardown ends the parts: the feed stops, the runnables
// return, and the budget is unbound from the manager.
func (p *Parts) teardown() {
	p.close()
	cohorts.Leave(p.mgr, p.l) // out of the manager, out of its cohorts
	p.l.Unbind(p.mgr)
}

// close ends the parts' runnables and their feed's run.
func (p *Parts) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	if p.runCancel != nil {
		p.runCancel()
	}
	p.run = nil
}

// goRun runs f until the parts' run context ends or f is stopped; p.mu is
// held.
func (p *Parts) goRun(f *Feed) {
	ctx := p.run
	p.running.Add(1)
	go func() {
		defer p.running.Done()
		if err := f.Start(ctx); err != nil {
			log.FromContext(ctx).Error(err, "budget feed failed; its classes report it on each decision", "budget", p.l.Name())
		}
	}()
}

// feedRunner starts the budget's feed on the leader, where decisions
// are made, and returns once it has, when the manager stops or the parts
// are torn down.
type feedRunner struct{ p *Parts }

// Start implements manager.Runnable.
func (r feedRunner) Start(ctx context.Context) error {
	p := r.p
	p.mu.Lock()
	if !p.closed {
		p.run, p.runCancel = context.WithCancel(ctx)
		if p.feed != nil {
			p.goRun(p.feed)
		}
	}
	p.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-p.done:
	}
	p.mu.Lock()
	if p.runCancel != nil {
		p.runCancel()
	}
	// No feed starts after this (acquire runs one only while run is set):
	// a WaitGroup's Add from zero must not race its Wait below.
	p.run = nil
	p.mu.Unlock()
	p.running.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (feedRunner) NeedLeaderElection() bool { return true }

// lifetime unbinds the budget when the manager stops, on every
// replica (a replica never elected stops too): another manager may then
// draw from it.
type lifetime struct{ p *Parts }

// Start implements manager.Runnable.
func (r lifetime) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		r.p.teardown()
	case <-r.p.done:
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (lifetime) NeedLeaderElection() bool { return false }

var _ budgethook.Feed = feedRunner{}

// Ledger implements budgethook.Feed.
func (r feedRunner) Ledger() *ledger.Ledger { return r.p.l }

// WaitForSync implements budgethook.Feed: it waits for the feed of the
// classes drawing from the budget now.
func (r feedRunner) WaitForSync(ctx context.Context) error {
	r.p.mu.Lock()
	f := r.p.feed
	r.p.mu.Unlock()
	if f == nil {
		return fmt.Errorf("budget %q: no class draws from it", r.p.l.Name())
	}
	return f.WaitForSync(ctx)
}
