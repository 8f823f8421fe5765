package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// What a manager's classes share, in one object per manager: the classes
// it serves (claims), its status.class view, its namespace store, its
// ShadowPod cache, and its budgets' feeds with the runnable that starts
// them. It is made the first time the SDK meets the manager, and it goes
// with the manager: it is a runnable of the manager, which empties it when
// the manager stops, and the manager is the only thing that holds it.
//
// How it is found again. A controller-runtime manager has no slot for a
// library's state, and a package-level map keyed by manager would keep
// every manager's companions for the life of the process. The one
// per-manager registry the Manager interface offers is its converter
// registry (GetConverterRegistry), a map from a GroupKind to a value that
// lives exactly as long as the manager: the companions are registered there
// under companionsKind, a GroupKind of the SDK's own that no API server
// serves, so the conversion webhook (which looks converters up by the kind
// of the object a ConversionReview carries) can never reach it. As with
// controller-runtime's own builders, which write that registry too, the
// SDK's registrations in one manager (AddToManager, NewClassSet,
// SetupWithManager, AddUnservedReporter) are made before the manager
// starts, from one goroutine; ClassSet.Serve, which may run later and from
// any goroutine, uses the companions its NewClassSet found.

// companionsKind is the key of a manager's companions in its converter
// registry.
var companionsKind = schema.GroupKind{Group: "companions.sliceclass.io", Kind: "ManagerCompanions"}

// companions is one manager's shared state; see above.
type companions struct {
	mgr manager.Manager

	mu sync.Mutex
	// claims are the classes the manager serves: a class registered twice
	// is refused at registration, with no API call.
	claims map[string]bool
	// views is the status.class view, built on first use.
	views *statusClasses
	// namespaces reads namespaces' consumers, shared by the classes and the
	// budget feeds.
	namespaces *namespaceStore
	// pods is the trimmed ShadowPod cache, built with the first feed.
	pods cache.Cache
	// feeds are the budgets' feeds, one per budget, with how many classes
	// draw from each; host starts them on the leader.
	feeds map[*ledger.Ledger]*feedRef
	host  *feedHost
	// started is set when the manager started: its caches read the
	// scheme, which addTypes then leaves alone.
	started bool
	// stopped is set when the manager stopped: nothing is kept any more.
	stopped bool
}

var _ manager.Runnable = &companions{}

// companionsOf returns mgr's companions, made and added to mgr on first use.
func companionsOf(mgr manager.Manager) (*companions, error) {
	reg := mgr.GetConverterRegistry()
	if reg == nil {
		return nil, errors.New("the manager has no converter registry, where the SDK keeps what the manager's classes share")
	}
	if c, ok := reg.GetConverter(companionsKind); ok {
		mc, ok := c.(*companions)
		if !ok {
			return nil, fmt.Errorf("the manager's converter registry holds a %T under %s, which the SDK keeps for itself", c, companionsKind)
		}
		return mc, nil
	}
	mc := &companions{
		mgr:        mgr,
		claims:     map[string]bool{},
		namespaces: &namespaceStore{cache: mgr.GetCache()},
		feeds:      map[*ledger.Ledger]*feedRef{},
	}
	if err := mgr.Add(mc); err != nil {
		return nil, fmt.Errorf("adding the classes' shared state to the manager: %w", err)
	}
	if err := reg.RegisterConverter(companionsKind, mc); err != nil {
		return nil, fmt.Errorf("keeping the classes' shared state in the manager: %w", err)
	}
	return mc, nil
}

// ConvertObject implements conversion.Converter, the type of the registry
// the companions are kept in; nothing converts through it.
func (*companions) ConvertObject(context.Context, runtime.Object, runtime.Object) error {
	return errors.New("sliceclass keeps a manager's shared state in its converter registry: nothing converts through it")
}

// Start implements manager.Runnable: when the manager stops, the
// companions let go of the caches and the feed host (they stopped with the
// manager). Claims and feeds are given back by their classes as each
// stops, once its decisions have returned.
func (mc *companions) Start(ctx context.Context) error {
	mc.mu.Lock()
	mc.started = true
	mc.mu.Unlock()
	<-ctx.Done()
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.stopped = true
	mc.views, mc.pods, mc.host = nil, nil, nil
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the state
// is the manager's, on every replica.
func (*companions) NeedLeaderElection() bool { return false }

// size is how many things the companions hold beyond the namespace store:
// claims, feeds, the status.class view, the ShadowPod cache and the feed
// host.
func (mc *companions) size() int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	n := len(mc.claims) + len(mc.feeds)
	for _, held := range []bool{mc.views != nil, mc.pods != nil, mc.host != nil} {
		if held {
			n++
		}
	}
	return n
}

// claim records that the manager serves class.
func (mc *companions) claim(class string) error {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.claims[class] {
		return fmt.Errorf("class %q: %w", class, ErrClassRegistered)
	}
	mc.claims[class] = true
	return nil
}

func (mc *companions) unclaim(class string) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	delete(mc.claims, class)
}

// addTypes adds to the manager's scheme what the SDK reads and writes and
// the scheme lacks: Liqo's authentication types (ResourceSlice, Tenant),
// Liqo's Quota, and coordination/v1 when leases is set (class Leases and
// the unserved reporter read and write Leases through the manager's
// client). It does so only before the manager starts, one registration at
// a time: once started, the manager's caches read the scheme, so a missing
// type is an error that says what to add, and the scheme is not touched.
func (mc *companions) addTypes(leases bool) error {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	scheme := mc.mgr.GetScheme()
	type want struct {
		what string
		kind schema.GroupVersionKind
		add  func(*runtime.Scheme) error
	}
	wants := []want{
		{"Liqo's authentication/v1beta1 (authv1beta1.AddToScheme)", authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind), authv1beta1.AddToScheme},
		{"Liqo's authentication/v1beta1 (authv1beta1.AddToScheme)", authv1beta1.GroupVersion.WithKind(authv1beta1.TenantKind), authv1beta1.AddToScheme},
		{"Liqo's offloading/v1beta1 Quota", offloadingv1beta1.SchemeGroupVersion.WithKind(quotaKind.Kind), func(s *runtime.Scheme) error { addQuotaTypes(s); return nil }},
	}
	if leases {
		wants = append(wants, want{"coordination/v1 (coordinationv1.AddToScheme)", coordinationv1.SchemeGroupVersion.WithKind("Lease"), coordinationv1.AddToScheme})
	}
	var missing []want
	for _, w := range wants {
		if !scheme.Recognizes(w.kind) {
			missing = append(missing, w)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if mc.started {
		var names []string
		for _, w := range missing {
			if !slices.Contains(names, w.what) {
				names = append(names, w.what)
			}
		}
		return fmt.Errorf("the manager's scheme lacks %s and the manager has started: its caches read the scheme, "+
			"so the SDK does not change it now; add them to the scheme before starting the manager", strings.Join(names, ", "))
	}
	for _, w := range missing {
		if scheme.Recognizes(w.kind) { // added with an earlier kind of its group
			continue
		}
		if err := w.add(scheme); err != nil {
			return fmt.Errorf("adding %s to the manager's scheme: %w", w.what, err)
		}
	}
	return nil
}

// statusClasses returns the manager's status.class view, built on first use.
func (mc *companions) statusClasses() (*statusClasses, error) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.views != nil {
		return mc.views, nil
	}
	if mc.stopped {
		return nil, errors.New("the manager stopped")
	}
	v, err := newStatusClasses(mc.mgr)
	if err != nil {
		return nil, err
	}
	mc.views = v
	return v, nil
}

// namespaceStore returns the manager's namespace store.
func (mc *companions) namespaceStore() *namespaceStore {
	return mc.namespaces
}

// feedRef is a budget's feed in one manager and how many classes of the
// manager draw from the budget.
type feedRef struct {
	f    *budgetFeed
	refs int
}

// feed returns the feed of l from the manager's informers, started by its
// feed host: one per budget and manager, whatever the classes drawing. Each
// call takes a reference that releaseFeed gives back.
func (mc *companions) feed(l *ledger.Ledger, views *statusClasses) (*budgetFeed, error) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if ref := mc.feeds[l]; ref != nil {
		ref.refs++
		return ref.f, nil
	}
	if mc.stopped {
		return nil, fmt.Errorf("budget %q: the manager stopped", l.Name())
	}
	if mc.host == nil {
		host := &feedHost{}
		if err := mc.mgr.Add(host); err != nil {
			return nil, fmt.Errorf("budget %q: adding the budget feeds to the manager: %w", l.Name(), err)
		}
		mc.host = host
	}
	if mc.pods == nil {
		pods, err := newShadowPodCache(mc.mgr)
		if err != nil {
			return nil, fmt.Errorf("budget %q: %w", l.Name(), err)
		}
		mc.pods = pods
	}
	f := newBudgetFeed(mc.mgr, l, views, mc.namespaces, mc.pods)
	l.SetLogger(mc.mgr.GetLogger().WithName("budget").WithValues("budget", l.Name()))
	mc.host.add(f)
	mc.feeds[l] = &feedRef{f: f, refs: 1}
	return f, nil
}

// releaseFeed gives back a reference feed took: once no class of the
// manager draws from l, its feed stops (its handlers leave the informers),
// the ledger forgets what that feed told it (the next feed rebuilds it),
// and the feed is forgotten.
func (mc *companions) releaseFeed(l *ledger.Ledger) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	ref := mc.feeds[l]
	if ref == nil {
		return
	}
	if ref.refs--; ref.refs > 0 {
		return
	}
	ref.f.stop()
	if mc.host != nil {
		mc.host.forget(ref.f)
	}
	l.ForgetAll()
	delete(mc.feeds, l)
}

// feedHost runs a manager's budget feeds on its leader: added to the
// manager once, it starts each feed as it is asked for (or, before the
// manager is elected, when it is), and holds only the feeds some class
// draws from, so a budget replaced many times leaves no runnable behind.
// Its Start returns when every feed it started has returned.
type feedHost struct {
	mu      sync.Mutex
	ctx     context.Context // set once elected
	pending []*budgetFeed
	// running counts the feeds started; closed is set once Start waits
	// for them: no feed starts after.
	running sync.WaitGroup
	closed  bool
}

// Start implements manager.Runnable.
func (h *feedHost) Start(ctx context.Context) error {
	h.mu.Lock()
	h.ctx = ctx
	for _, f := range h.pending {
		h.goRun(f)
	}
	h.pending = nil
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.running.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: feeds run
// where decisions are made.
func (*feedHost) NeedLeaderElection() bool { return true }

// add starts f, now or once the manager is elected.
func (h *feedHost) add(f *budgetFeed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
	case h.ctx == nil:
		h.pending = append(h.pending, f)
	default:
		h.goRun(f)
	}
}

// goRun runs f until the host's context ends or f is stopped; h.mu is held.
func (h *feedHost) goRun(f *budgetFeed) {
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		h.run(h.ctx, f)
	}()
}

// forget drops f if it is still waiting to start.
func (h *feedHost) forget(f *budgetFeed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, p := range h.pending {
		if p == f {
			h.pending = append(h.pending[:i], h.pending[i+1:]...)
			return
		}
	}
}

func (h *feedHost) run(ctx context.Context, f *budgetFeed) {
	if err := f.Start(ctx); err != nil {
		log.FromContext(ctx).Error(err, "budget feed failed; its classes report it on each decision")
	}
}
