package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/handler"
)

// ErrClassNotServed is returned (wrapped) by ClassSet.Stop for a class the
// set does not serve.
var ErrClassNotServed = errors.New("class not served by this ClassSet")

// ClassSet serves classes that come and go while the manager runs: a
// provider adds a "gpu" class, or swaps a class's policy, without
// restarting its controller and without pausing the other classes. Each
// class is its own controller on the manager's shared informers: serving or
// stopping one never restarts the others and never re-lists from the API
// server.
//
// With leader election on, classes are decided only on the leader: the set
// starts its classes when the manager elects it. With the manager's
// EnableWarmup on (manager.Options.Controller), a standby starts the
// informers its classes read before it is elected, so that a new leader
// decides at once instead of first listing every slice.
//
// Many classes, one set: the set's classes and the budgets they draw from
// share one status.class view and one ShadowPod watch, so a manager holds
// one set, built in main next to the manager, as it holds one cache.
type ClassSet struct {
	mgr manager.Manager
	// mc is what the set's classes share: Serve, from any goroutine and
	// at any time, claims its classes there.
	mc       *companions
	defaults []Option

	mu      sync.Mutex
	ctx     context.Context // set once the manager starts the set
	warmCtx context.Context // set once the manager warms the set up
	classes map[string]*servedClass
	// running counts the goroutines the set started (classes, warm-ups);
	// the set's Start waits for them. closed is set once it waits: the
	// set starts nothing more.
	running sync.WaitGroup
	closed  bool
}

type servedClass struct {
	cc     *classController
	cancel context.CancelFunc
	done   chan struct{}
	// released gives the class back to the manager once.
	released sync.Once
}

// release gives back what the class holds in the manager (its budgets,
// then its name), once: by Stop, by the class's goroutine after a Stop
// that gave up waiting, or by the set's Start when the manager stops.
func (sc *servedClass) release() { sc.released.Do(sc.cc.release) }

// NewClassSet returns an empty ClassSet in mgr, the one object a
// manager's classes share: build it once in main, next to the manager,
// and serve every class through it (Serve). opts are the defaults of
// every class it serves (a class's own options come after them). It
// returns an error for a nil manager, a bad option, or a manager's scheme
// that lacks Liqo's ResourceSlice (or coordination/v1 Lease, when the
// defaults set WithClassLease): see AddToScheme; the scheme is never
// changed. It makes no API call.
func NewClassSet(mgr manager.Manager, opts ...Option) (*ClassSet, error) {
	if mgr == nil {
		return nil, errors.New("class set: nil manager")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("class set: invalid options: %w", err)
	}
	if err := (schemeNeeds{leases: cfg.leaseNamespace != ""}).check(mgr.GetScheme()); err != nil {
		return nil, fmt.Errorf("class set: %w", err)
	}
	mc, err := newCompanions(mgr)
	if err != nil {
		return nil, fmt.Errorf("class set: %w", err)
	}
	cs := &ClassSet{mgr: mgr, mc: mc, defaults: append([]Option(nil), opts...), classes: map[string]*servedClass{}}
	if err := mgr.Add(classSetRunnable{cs}); err != nil {
		return nil, fmt.Errorf("class set: adding to the manager: %w", err)
	}
	return cs, nil
}

// Serve starts deciding class's slices with h, before or after the manager
// starts, from any goroutine. Waiting slices are decided within seconds;
// serving a class again after Stop, possibly with another handler,
// re-evaluates its slices and writes only what changes. It applies the same
// rules as AddToManager: an error for a reserved or invalid class, a nil
// handler, a bad option, or a scheme lacking a type the class reads or
// writes. A class the set already serves (or set up, or whose Stop has not
// released it yet) is refused with ErrClassRegistered. The first time a set
// serves a class, controller-runtime's controller-name check refuses a
// class another set or AddToManager registered in the process (unless the
// manager's controller options skip that check).
func (cs *ClassSet) Serve(class string, h handler.Handler, opts ...Option) error {
	all := append(append([]Option(nil), cs.defaults...), opts...)
	cc, err := cs.mc.newClassController(class, h, all, true)
	if err != nil {
		return err
	}
	sc := &servedClass{cc: cc}
	reads := cc.reads
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		sc.release()
		return fmt.Errorf("class %q: the class set's manager stopped", class)
	}
	cs.classes[class] = sc
	switch {
	case cs.ctx != nil:
		cs.start(sc)
	case cs.warmCtx != nil:
		// A class served by a warm standby is warm too when it is elected.
		warmCtx := cs.warmCtx
		cs.running.Add(1)
		go func() {
			defer cs.running.Done()
			if err := cs.warm(warmCtx, reads); err != nil && warmCtx.Err() == nil {
				cs.mgr.GetLogger().Error(err, "warming up a class's informers", "class", class)
			}
		}()
	}
	return nil
}

// Stop stops deciding class's slices: the class takes no new slice, and
// Stop returns when its decisions in flight have ended (each is finished
// and written, the process still leading) or when ctx ends, whichever
// comes first. The manager stopping, or losing its leader election, ends
// them at once, as it ends every class's (see AddToManager). Its decisions stay
// as they are. What its Accepted slices hold in a budget stays counted,
// since they still hold it: serving the class again brings that up to
// date, and until then a slice deleted meanwhile is still counted (the
// budget under-commits, never over-commits). Other classes are undisturbed.
//
// When ctx ends first, Stop ends the context of the decisions in flight
// (a status patch already sent is left a short grace to be answered) and
// returns ctx's error; the class is released (its budgets, then its name)
// only when they have returned, so until then Serve of the class fails with
// ErrClassRegistered: a handler is never called twice at once for a slice.
// Stop returns an error wrapping ErrClassNotServed if the set does not
// serve class.
func (cs *ClassSet) Stop(ctx context.Context, class string) error {
	cs.mu.Lock()
	sc, ok := cs.classes[class]
	delete(cs.classes, class)
	cs.mu.Unlock()
	if !ok {
		return fmt.Errorf("class %q: %w", class, ErrClassNotServed)
	}
	if sc.cancel == nil { // never started
		sc.release()
		return nil
	}
	sc.cancel()
	select {
	case <-sc.done:
		sc.release()
		return nil
	case <-ctx.Done():
		// The class's goroutine releases it once its decisions return.
		sc.cc.abortStop()
		return fmt.Errorf("class %q: stopped taking slices, but decisions still in flight did not end in time: %w", class, ctx.Err())
	}
}

// Classes returns the classes the set serves, sorted.
func (cs *ClassSet) Classes() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]string, 0, len(cs.classes))
	for c := range cs.classes {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// classSetRunnable runs the set in the manager: on the leader only, warm
// before election when the manager enables warm-up.
type classSetRunnable struct{ cs *ClassSet }

// Start implements manager.Runnable: it starts the classes served so far
// and those served later, until ctx ends, then waits for every goroutine
// the set started (classes still served, classes whose Stop gave up
// waiting, warm-ups) and releases the classes.
func (r classSetRunnable) Start(ctx context.Context) error {
	cs := r.cs
	cs.mu.Lock()
	cs.ctx = ctx
	for _, sc := range cs.classes {
		cs.start(sc)
	}
	cs.mu.Unlock()
	<-ctx.Done()
	cs.mu.Lock()
	cs.closed = true
	cs.mu.Unlock()
	cs.running.Wait()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, sc := range cs.classes {
		sc.release()
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: classes are
// decided on the leader only.
func (classSetRunnable) NeedLeaderElection() bool { return true }

// Warmup implements the manager's warm-up runnable.
func (r classSetRunnable) Warmup(ctx context.Context) error { return r.cs.warmup(ctx) }

// warmup is called by the manager before it is elected, as it warms up its
// own controllers. When the manager's controller options enable warm-up
// (EnableWarmup), it starts and syncs the informers of ResourceSlices and of
// what the served classes read (Tenants, namespaces, WithWatch objects), so
// that a new leader decides at once instead of first listing every slice.
// The informers are the manager's own, shared with every class; nothing is
// decided until the set is elected. Warming up is best effort: an informer
// that cannot start is logged, and fails its class when elected, as without
// warm-up.
func (cs *ClassSet) warmup(ctx context.Context) error {
	if on := cs.mgr.GetControllerOptions().EnableWarmup; on == nil || !*on {
		return nil
	}
	cs.mu.Lock()
	cs.warmCtx = ctx
	reads := []client.Object{&authv1beta1.ResourceSlice{}}
	for _, sc := range cs.classes {
		reads = append(reads, sc.cc.reads...)
	}
	cs.mu.Unlock()
	if err := cs.warm(ctx, reads); err != nil && ctx.Err() == nil {
		// Warming is an optimisation: a type that cannot be watched fails
		// its class when elected, as without warm-up, not the manager.
		cs.mgr.GetLogger().Error(err, "class set: warming up informers before election")
	}
	return nil
}

// warm starts the cache's informers for objs and waits, at most the
// manager's CacheSyncTimeout (2 minutes by default), for them to sync.
func (cs *ClassSet) warm(ctx context.Context, objs []client.Object) error {
	timeout := cs.mgr.GetControllerOptions().CacheSyncTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, obj := range objs {
		if _, err := cs.mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("warming up the informer of %T: %w", obj, err)
		}
	}
	return nil
}

// start runs one class's controller (and what runs beside it) under the
// set's context; cs.mu is held. Its decisions in flight outlive Stop (which
// ends ctx) until the set's context ends or Stop gives up (abortStop).
func (cs *ClassSet) start(sc *servedClass) {
	ctx, cancel := context.WithCancel(cs.ctx)
	sc.cancel, sc.done = cancel, make(chan struct{})
	sc.cc.abort, sc.cc.abortStop = context.WithCancel(cs.ctx)
	cs.running.Add(1)
	go func() {
		defer cs.running.Done()
		err := sc.cc.run(ctx)
		sc.cc.abortStop()
		close(sc.done)
		if err != nil {
			sc.cc.logger().Error(err, "class controller stopped with an error")
		}
		cs.mu.Lock()
		stopped := cs.classes[sc.cc.r.scope.class] != sc
		cs.mu.Unlock()
		if stopped {
			sc.release() // Stop gave up waiting, or releases it too: once
		}
	}()
}
