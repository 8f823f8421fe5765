package resourceslice

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// What a budget holds in the one manager its classes run in hangs off the
// budget (its ledger's binding), not off the manager: its feed, one
// whatever the classes drawing; the ShadowPod cache the feed reads; and
// two runnables added to the manager with them. The first class that draws
// from the budget in a manager binds it there; a class of another manager
// is refused (ledger.ErrBoundElsewhere) until that manager stops.

// budgetParts is a budget's feed and caches in one manager.
type budgetParts struct {
	mgr manager.Manager
	l   *ledger.Ledger

	mu sync.Mutex
	// pods is the trimmed ShadowPod cache the feed reads, built with the
	// first feed.
	pods cache.Cache
	// feed is the budget's feed while a class draws from it, and refs how
	// many classes do.
	feed *budgetFeed
	refs int
	// ctx is the leader's context once the manager is elected: a feed
	// starts then, or at once when made later.
	ctx context.Context
	// closed is set once the manager stops: no feed starts after, and
	// the budget is unbound.
	closed  bool
	running sync.WaitGroup
}

// partsOf returns what l holds in mgr, binding l to mgr on first use.
func partsOf(mgr manager.Manager, l *ledger.Ledger) (*budgetParts, error) {
	p, err := l.Bind(mgr, func() (any, error) {
		bp := &budgetParts{mgr: mgr, l: l}
		if err := mgr.Add(budgetLifetime{bp}); err != nil {
			return nil, fmt.Errorf("budget %q: adding it to the manager: %w", l.Name(), err)
		}
		if err := mgr.Add(budgetFeedRunner{bp}); err != nil {
			return nil, fmt.Errorf("budget %q: adding its feed to the manager: %w", l.Name(), err)
		}
		return bp, nil
	})
	if err != nil {
		return nil, err
	}
	return p.(*budgetParts), nil
}

// acquire returns the budget's feed, made on first use, and takes a
// reference that release gives back. views and namespaces are the
// manager's status.class view and namespace store.
func (p *budgetParts) acquire(views *statusClasses, namespaces *namespaceStore) (*budgetFeed, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("budget %q: the manager stopped", p.l.Name())
	}
	if p.feed != nil {
		p.refs++
		return p.feed, nil
	}
	if p.pods == nil {
		pods, err := newShadowPodCache(p.mgr)
		if err != nil {
			return nil, fmt.Errorf("budget %q: %w", p.l.Name(), err)
		}
		p.pods = pods
	}
	f := newBudgetFeed(p.mgr, p.l, views, namespaces, p.pods)
	p.l.SetLogger(p.mgr.GetLogger().WithName("budget").WithValues("budget", p.l.Name()))
	p.feed, p.refs = f, 1
	if p.ctx != nil {
		p.goRun(f)
	}
	return f, nil
}

// release gives back a reference acquire took: once no class draws from
// the budget, its feed stops (its handlers leave the informers) and the
// ledger forgets what the feed told it (the next feed counts it again).
func (p *budgetParts) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.feed == nil {
		return
	}
	if p.refs--; p.refs > 0 {
		return
	}
	p.feed.stop()
	p.feed = nil
	p.l.ForgetAll()
}

// goRun runs f until the leader's context ends or f is stopped; p.mu is
// held.
func (p *budgetParts) goRun(f *budgetFeed) {
	p.running.Add(1)
	ctx := p.ctx
	go func() {
		defer p.running.Done()
		if err := f.Start(ctx); err != nil {
			log.FromContext(ctx).Error(err, "budget feed failed; its classes report it on each decision", "budget", p.l.Name())
		}
	}()
}

// budgetFeedRunner starts the budget's feed on the leader, where decisions
// are made, and returns once it has.
type budgetFeedRunner struct{ p *budgetParts }

// Start implements manager.Runnable.
func (r budgetFeedRunner) Start(ctx context.Context) error {
	p := r.p
	p.mu.Lock()
	if !p.closed {
		p.ctx = ctx
		if p.feed != nil {
			p.goRun(p.feed)
		}
	}
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.running.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (budgetFeedRunner) NeedLeaderElection() bool { return true }

// budgetLifetime unbinds the budget when the manager stops, on every
// replica (a replica never elected stops too): another manager may then
// draw from it.
type budgetLifetime struct{ p *budgetParts }

// Start implements manager.Runnable.
func (r budgetLifetime) Start(ctx context.Context) error {
	<-ctx.Done()
	p := r.p
	p.mu.Lock()
	p.closed = true
	p.pods = nil
	p.mu.Unlock()
	p.l.Unbind(p.mgr)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (budgetLifetime) NeedLeaderElection() bool { return false }
