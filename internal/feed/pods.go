package feed

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Pods is the one ShadowPod watch of a set of classes (a
// resourceslice.ClassSet): every budget its classes draw from reads the
// consumers' running pods from it, so that ten budgets cost one watch and
// one copy of each pod's charge, not ten. It is a trimmed cache of its own
// (see shadowpods.go), built when the first budget's feed asks for it and
// started on the leader; when the last feed lets go of it, it stops and
// is dropped, so a set whose budgets come and go keeps no watch nobody
// reads.
type Pods struct {
	mgr manager.Manager
	// started is closed when the manager runs the watch's runnable (on
	// the leader): run is then its context.
	started chan struct{}

	mu  sync.Mutex
	run context.Context
	// c is the cache while a feed reads it, users how many do; stop ends
	// it. builds counts the caches built, for tests.
	c       cache.Cache
	stop    context.CancelFunc
	users   int
	builds  int
	running sync.WaitGroup
}

// NewPods returns the ShadowPod watch of a set of classes in mgr, and adds
// its runnable to mgr. It builds nothing until a feed asks.
func NewPods(mgr manager.Manager) (*Pods, error) {
	p := &Pods{mgr: mgr, started: make(chan struct{})}
	if err := mgr.Add(podsRunner{p}); err != nil {
		return nil, fmt.Errorf("adding the ShadowPod watch to the manager: %w", err)
	}
	return p, nil
}

// Builds is how many ShadowPod caches the watch has built so far: one
// while any number of budgets read it.
func (p *Pods) Builds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.builds
}

// informer returns the ShadowPod informer, building and starting the cache
// on first use, and the func that lets go of it (the last one stops the
// cache). It waits, until ctx ends, for the manager to run the watch.
func (p *Pods) informer(ctx context.Context) (cache.Informer, func(), error) {
	select {
	case <-p.started:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("waiting for the ShadowPod watch to start: %w", ctx.Err())
	}
	p.mu.Lock()
	if p.run.Err() != nil {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("the ShadowPod watch stopped: %w", p.run.Err())
	}
	if p.c == nil {
		c, err := newShadowPodCache(p.mgr)
		if err != nil {
			p.mu.Unlock()
			return nil, nil, err
		}
		cctx, stop := context.WithCancel(p.run)
		p.c, p.stop = c, stop
		p.builds++
		p.running.Add(1)
		go func() {
			defer p.running.Done()
			if err := c.Start(cctx); err != nil {
				log.FromContext(cctx).Error(err, "the ShadowPod cache of a set of classes stopped")
			}
		}()
	}
	c := p.c
	p.users++
	p.mu.Unlock()
	var once sync.Once
	letGo := func() { once.Do(func() { p.letGo(c) }) }
	inf, err := c.GetInformer(ctx, &shadowPodCharge{})
	if err != nil {
		letGo()
		return nil, nil, err
	}
	return inf, letGo, nil
}

// letGo gives back a use of c; the last one stops it.
func (p *Pods) letGo(c cache.Cache) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != c {
		return
	}
	if p.users--; p.users == 0 {
		p.stop()
		p.c, p.stop = nil, nil
	}
}

// podsRunner gives the watch the leader's context, and waits, when the
// manager stops, for the cache it started to return.
type podsRunner struct{ p *Pods }

// Start implements manager.Runnable.
func (r podsRunner) Start(ctx context.Context) error {
	p := r.p
	p.mu.Lock()
	p.run = ctx
	close(p.started)
	p.mu.Unlock()
	<-ctx.Done()
	// A WaitGroup's Add from zero must not race its Wait: an informer call
	// that holds mu now has added its cache's goroutine before this takes
	// mu, and one that takes mu after sees run ended and adds nothing.
	p.mu.Lock()
	p.mu.Unlock() //nolint:staticcheck // an empty critical section: a barrier, see above
	p.running.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: budgets
// are counted on the leader.
func (podsRunner) NeedLeaderElection() bool { return true }
