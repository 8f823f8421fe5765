package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// ErrClassRegistered is returned (wrapped) when a class is registered twice
// in one manager.
var ErrClassRegistered = errors.New("class already registered in this manager")

// AddToManager registers a controller named "resourceslice-<class>" in mgr
// that decides the class's ResourceSlices with h. Call it once per class,
// before mgr.Start.
//
// It returns an error naming the class for an empty or "default" class
// (Liqo's own), a class that is not a valid label value, a nil handler, a
// class already registered in this manager (errors.Is ErrClassRegistered),
// or a bad option. It adds Liqo's authentication types to the manager's
// scheme only if they are missing. It makes no API call: a manager whose API
// server is unreachable fails at Start, not here.
//
// The manager's client must read ResourceSlices (and Tenants, unless
// WithoutTenantRule) and patch resourceslices/status; its cache must see the
// namespaces where Liqo replicates slices.
func AddToManager(mgr manager.Manager, class string, h handler.Handler, opts ...Option) error {
	cc, err := newClassController(mgr, class, h, opts, false)
	if err != nil {
		return err
	}
	if err := mgr.Add(managedClass{cc: cc}); err != nil {
		cc.release()
		return fmt.Errorf("class %q: adding controller %q to the manager: %w", class, ControllerName(class), err)
	}
	return nil
}

// prepare validates a class's registration and builds its Reconciler,
// bound to mgr: shared by AddToManager and ClassSet, so both apply the same
// rules. On success the class is claimed in mgr; the caller releases it if
// it fails later.
func prepare(mgr manager.Manager, class string, h handler.Handler, opts []Option) (*classController, error) {
	if mgr == nil {
		return nil, fmt.Errorf("class %q: nil manager", class)
	}
	if err := ValidateClass(class); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("class %q: nil handler", class)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("class %q: invalid options: %w", class, err)
	}
	if err := classes.addTypes(mgr, cfg.leaseNamespace != ""); err != nil {
		return nil, fmt.Errorf("class %q: adding Liqo's types (and coordination/v1 for class Leases) to the manager's scheme: %w", class, err)
	}
	// Claim the name first: a concurrent registration of the class then
	// fails with ErrClassRegistered before it touches the budgets.
	if err := classes.claim(mgr, class); err != nil {
		return nil, err
	}
	r, err := newReconciler(mgr.GetClient(), class, h, cfg, wiring{})
	if err != nil {
		classes.unclaim(mgr, class)
		return nil, err
	}
	return bindClass(mgr, r, true)
}

// bindClass claims r's class in mgr (unless claimed) and gives r what a manager has beyond
// its client: the event recorder (unless WithEventRecorder), the
// status.class view, the budgets' feeds and the API reader. claimed says
// the SDK built r with the manager's client (AddToManager, ClassSet): its
// status writes then go through the manager's REST config without decoding
// the answer; a Reconciler built with NewReconciler keeps writing through
// the client its user chose.
func bindClass(mgr manager.Manager, r *Reconciler, claimed bool) (*classController, error) {
	class := r.scope.class
	if !claimed {
		if err := classes.addTypes(mgr, r.cfg.leaseNamespace != ""); err != nil {
			return nil, fmt.Errorf("class %q: adding Liqo's types to the manager's scheme: %w", class, err)
		}
		if err := classes.claim(mgr, class); err != nil {
			return nil, err
		}
	}
	cc := &classController{mgr: mgr, r: r, cfg: r.cfg}
	if need := mgr.GetControllerOptions().NeedLeaderElection; len(r.ledgers) > 0 && need != nil && !*need {
		cc.release()
		return nil, fmt.Errorf("class %q: %w", class, errBudgetNeedsLeader)
	}
	cc.abort, cc.abortStop = context.WithCancel(context.Background())
	if claimed {
		w, err := newRESTStatus(mgr)
		if err != nil {
			cc.release()
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		r.status = w
	}
	views, err := classes.statusClasses(mgr)
	if err != nil {
		cc.release()
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	var feeds []*budgetFeed
	for _, l := range r.ledgers {
		f, err := classes.feed(mgr, l, views)
		if err != nil {
			cc.release()
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		feeds = append(feeds, f)
		cc.feeds = append(cc.feeds, l)
	}
	if r.owned != nil {
		// Owned objects are read from the manager's cache, whose metadata
		// informers the class's owned-type sources start.
		o, err := newOwnedObjects(r.handler, r.client, mgr.GetCache(), class, r.cfg.ownedTypes)
		if err != nil {
			cc.release()
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		r.owned = o
	}
	r.cfg.statusClasses = views
	r.scope.status = views
	r.wiring = wiring{apiReader: mgr.GetAPIReader(), feeds: feeds, namespaces: classes.namespaceStore(mgr)}
	if r.cfg.recorder == nil {
		r.recorder = mgr.GetEventRecorder(ControllerName(class))
	}
	return cc, nil
}

// errBudgetNeedsLeader refuses a budget on a manager whose controllers run
// on every replica: a budget is counted in one process, the leader, and a
// class deciding on the others would wait for a feed that never runs there.
var errBudgetNeedsLeader = errors.New("WithBudget needs the class's controller to run on the elected leader only, " +
	"but the manager's Controller.NeedLeaderElection is false (a budget is counted in one process: replicas deciding " +
	"at once would each admit up to its total); unset it, or serve budgeted classes from a manager that elects a leader")

// requestLogger builds controller-runtime's per-request logger from base:
// the same keys its default logger adds (namespace, name), so WithLogger
// changes where lines go, not what they say.
func requestLogger(base logr.Logger) func(*reconcile.Request) logr.Logger {
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("ResourceSlice", req.String(), "namespace", req.Namespace, "name", req.Name)
	}
}

// classRegistry remembers which classes each manager serves, so that a
// class registered twice is refused at registration, with no API call.
// controller-runtime keeps its controller-name registry the same way (per
// process); ours is per manager, so tests and programs may run several
// managers serving the same class.
type classRegistry struct {
	mu    sync.Mutex
	byMgr map[manager.Manager]map[string]bool
	views map[manager.Manager]*statusClasses
	feeds map[manager.Manager]map[*ledger.Ledger]*feedRef
	hosts map[manager.Manager]*feedHost
	// podCaches are the managers' trimmed ShadowPod caches.
	podCaches map[manager.Manager]cache.Cache
	// nsStores read namespaces' consumers, one per manager.
	nsStores map[manager.Manager]*namespaceStore
	inited   bool
}

// classes is the one registry of the process. It only grows when a manager
// registers a class; managers are few and live as long as the process.
var classes classRegistry

func (c *classRegistry) claim(mgr manager.Manager, class string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	set := c.byMgr[mgr]
	if set == nil {
		set = map[string]bool{}
		c.byMgr[mgr] = set
	}
	if set[class] {
		return fmt.Errorf("class %q: %w", class, ErrClassRegistered)
	}
	set[class] = true
	return nil
}

// addTypes adds Liqo's authentication types to mgr's scheme if they are
// missing, and coordination/v1 when leases is set (class Leases, and the
// unserved reporter, read and write Leases through the manager's client),
// one registration at a time (concurrent Serve calls share the scheme). Add
// them to your scheme before starting the manager if classes are served
// after start: the running caches read the scheme.
func (c *classRegistry) addTypes(mgr manager.Manager, leases bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	scheme := mgr.GetScheme()
	if !scheme.Recognizes(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind)) ||
		!scheme.Recognizes(authv1beta1.GroupVersion.WithKind(authv1beta1.TenantKind)) {
		if err := authv1beta1.AddToScheme(scheme); err != nil {
			return err
		}
	}
	addQuotaTypes(scheme)
	if leases && !scheme.Recognizes(coordinationv1.SchemeGroupVersion.WithKind("Lease")) {
		return coordinationv1.AddToScheme(scheme)
	}
	return nil
}

func (c *classRegistry) unclaim(mgr manager.Manager, class string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byMgr[mgr], class)
}

func (c *classRegistry) init() {
	if !c.inited {
		c.byMgr, c.views, c.inited = map[manager.Manager]map[string]bool{}, map[manager.Manager]*statusClasses{}, true
		c.feeds = map[manager.Manager]map[*ledger.Ledger]*feedRef{}
		c.hosts = map[manager.Manager]*feedHost{}
		c.podCaches = map[manager.Manager]cache.Cache{}
		c.nsStores = map[manager.Manager]*namespaceStore{}
	}
}

// feedRef is a budget's feed in one manager and how many classes of the
// manager draw from the budget.
type feedRef struct {
	f    *budgetFeed
	refs int
}

// feedHost runs a manager's budget feeds on its leader: added to the
// manager once, it starts each feed as it is asked for (or, before the
// manager is elected, when it is), and holds only the feeds some class
// draws from, so a budget replaced many times leaves no runnable behind.
type feedHost struct {
	mu      sync.Mutex
	ctx     context.Context // set once elected
	pending []*budgetFeed
}

// Start implements manager.Runnable.
func (h *feedHost) Start(ctx context.Context) error {
	h.mu.Lock()
	h.ctx = ctx
	pending := h.pending
	h.pending = nil
	h.mu.Unlock()
	for _, f := range pending {
		go h.run(ctx, f)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: feeds run
// where decisions are made.
func (*feedHost) NeedLeaderElection() bool { return true }

// add starts f, now or once the manager is elected.
func (h *feedHost) add(f *budgetFeed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil {
		h.pending = append(h.pending, f)
		return
	}
	go h.run(h.ctx, f)
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

// feed returns the feed of l from mgr's informers, started by mgr's feed
// host: one per budget and manager, whatever the classes drawing. Each call
// takes a reference that releaseFeed gives back.
func (c *classRegistry) feed(mgr manager.Manager, l *ledger.Ledger, views *statusClasses) (*budgetFeed, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	byLedger := c.feeds[mgr]
	if byLedger == nil {
		byLedger = map[*ledger.Ledger]*feedRef{}
		c.feeds[mgr] = byLedger
	}
	if ref := byLedger[l]; ref != nil {
		ref.refs++
		return ref.f, nil
	}
	host := c.hosts[mgr]
	if host == nil {
		host = &feedHost{}
		if err := mgr.Add(host); err != nil {
			return nil, fmt.Errorf("budget %q: adding the budget feeds to the manager: %w", l.Name(), err)
		}
		c.hosts[mgr] = host
	}
	pods := c.podCaches[mgr]
	if pods == nil {
		var err error
		if pods, err = newShadowPodCache(mgr); err != nil {
			return nil, fmt.Errorf("budget %q: %w", l.Name(), err)
		}
		c.podCaches[mgr] = pods
	}
	f := newBudgetFeed(mgr, l, views, c.namespaceStoreLocked(mgr), pods)
	host.add(f)
	byLedger[l] = &feedRef{f: f, refs: 1}
	return f, nil
}

// releaseFeed gives back a reference feed took: once no class of mgr draws
// from l, its feed stops (its handlers leave the informers), the ledger
// forgets what that feed told it (the next feed rebuilds it), and the feed
// is forgotten.
func (c *classRegistry) releaseFeed(mgr manager.Manager, l *ledger.Ledger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ref := c.feeds[mgr][l]
	if ref == nil {
		return
	}
	if ref.refs--; ref.refs > 0 {
		return
	}
	ref.f.stop()
	c.hosts[mgr].forget(ref.f)
	l.ForgetAll()
	delete(c.feeds[mgr], l)
	if len(c.feeds[mgr]) == 0 {
		delete(c.feeds, mgr)
	}
}

// namespaceStore returns the manager's namespace store, built on first
// use: one per manager, shared by its classes and budget feeds.
func (c *classRegistry) namespaceStore(mgr manager.Manager) *namespaceStore {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.namespaceStoreLocked(mgr)
}

func (c *classRegistry) namespaceStoreLocked(mgr manager.Manager) *namespaceStore {
	c.init()
	if s := c.nsStores[mgr]; s != nil {
		return s
	}
	s := &namespaceStore{cache: mgr.GetCache()}
	c.nsStores[mgr] = s
	return s
}

// statusClasses returns the manager's status.class view, built on first use.
func (c *classRegistry) statusClasses(mgr manager.Manager) (*statusClasses, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if v := c.views[mgr]; v != nil {
		return v, nil
	}
	v, err := newStatusClasses(mgr)
	if err != nil {
		return nil, err
	}
	c.views[mgr] = v
	return v, nil
}
