package feed

import (
	"context"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
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
	// it; index is its ShadowPod informer's indexer, with podUserIndex;
	// fan the ledgers its one handler (reg) tells of each event.
	// builds counts the caches built, for tests.
	c       cache.Cache
	index   toolscache.Indexer
	fan     *podFanout
	reg     toolscache.ResourceEventHandlerRegistration
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

// podUserIndex indexes the ShadowPods by their creator label's value,
// the Quota user they are charged to.
const podUserIndex = "sliceclass.liqo.io/creator-user"

// podsOfUser indexes a kept ShadowPod (see keepCharge) by its user.
func podsOfUser(obj any) ([]string, error) {
	if sp, ok := obj.(*shadowPodCharge); ok && sp.User != "" {
		return []string{sp.User}, nil
	}
	return nil, nil
}

// podIndex reads index's running ShadowPods of a user, for a ledger's
// SetPodIndex.
func podIndex(index toolscache.Indexer) ledger.PodIndex {
	return func(user string) []ledger.RunningPod {
		objs, err := index.ByIndex(podUserIndex, user)
		if err != nil { // the index is added before the cache starts
			return nil
		}
		out := make([]ledger.RunningPod, 0, len(objs))
		for _, o := range objs {
			sp, ok := o.(*shadowPodCharge)
			if !ok || !running(sp) {
				continue
			}
			out = append(out, ledger.RunningPod{Key: client.ObjectKeyFromObject(sp), Charge: sp.Charge,
				Meta: ledger.PodMeta{UID: sp.UID, Created: sp.CreationTimestamp.Time}})
		}
		return out
	}
}

// attach makes l count the consumers' running pods from the set's
// watch, building and starting its cache on first use: l joins the watch's
// one handler, then reads the pods of the users it counts from the
// watch's index (ledger.SetPodIndex), so that a pod is either in the
// index when l reads it or its event reaches l after. synced reports when
// the handler has delivered the watch's initial list; detach undoes attach
// (the last one stops the cache). It waits, until ctx ends, for the
// manager to run the watch.
func (p *Pods) attach(ctx context.Context, l *ledger.Ledger) (synced toolscache.InformerSynced, detach func(), err error) {
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
		// The index and the handler go on before the cache starts
		// (GetInformer does not wait for a cache not started).
		fan := &podFanout{ledgers: map[*ledger.Ledger]int{}}
		index, reg, err := watchPods(ctx, c, fan)
		if err != nil {
			p.mu.Unlock()
			return nil, nil, err
		}
		cctx, stop := context.WithCancel(p.run)
		p.c, p.stop, p.index, p.fan, p.reg = c, stop, index, fan, reg
		p.builds++
		p.running.Add(1)
		go func() {
			defer p.running.Done()
			if err := c.Start(cctx); err != nil {
				log.FromContext(cctx).Error(err, "the ShadowPod cache of a set of classes stopped")
			}
		}()
	}
	c, index, fan, reg := p.c, p.index, p.fan, p.reg
	p.users++
	p.mu.Unlock()
	fan.add(l)
	unset := l.SetPodIndex(podIndex(index))
	var once sync.Once
	detach = func() {
		once.Do(func() {
			fan.remove(l)
			unset()
			p.letGo(c)
		})
	}
	return reg.HasSynced, detach, nil
}

// watchPods adds podUserIndex and fan's handler to c's ShadowPod
// informer, and returns its indexer and the handler's registration.
func watchPods(ctx context.Context, c cache.Cache, fan *podFanout) (toolscache.Indexer, toolscache.ResourceEventHandlerRegistration, error) {
	inf, err := c.GetInformer(ctx, &shadowPodCharge{})
	if err != nil {
		return nil, nil, fmt.Errorf("the ShadowPod informer: %w", err)
	}
	if err := inf.AddIndexers(toolscache.Indexers{podUserIndex: podsOfUser}); err != nil {
		return nil, nil, fmt.Errorf("indexing ShadowPods by user: %w", err)
	}
	si, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, nil, fmt.Errorf("the ShadowPod informer (%T) has no indexer", inf)
	}
	reg, err := inf.AddEventHandler(shadowPodHandler(fan))
	if err != nil {
		return nil, nil, fmt.Errorf("watching Liqo's ShadowPods: %w", err)
	}
	return si.GetIndexer(), reg, nil
}

// podFanout is the ledgers that count from a watch: its one handler tells
// each of them every event (each keeps the pods of its own users), so that
// ten budgets cost the informer one handler and one buffer of pending
// events, not ten.
type podFanout struct {
	mu      sync.RWMutex
	ledgers map[*ledger.Ledger]int
}

func (f *podFanout) add(l *ledger.Ledger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ledgers[l]++
}

func (f *podFanout) remove(l *ledger.Ledger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ledgers[l]--; f.ledgers[l] <= 0 {
		delete(f.ledgers, l)
	}
}

// each calls do for each ledger.
func (f *podFanout) each(do func(*ledger.Ledger)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for l := range f.ledgers {
		do(l)
	}
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
		p.c, p.stop, p.index, p.fan, p.reg = nil, nil, nil, nil, nil
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
