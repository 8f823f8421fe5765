package resourceslice

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/classlease"
	"github.com/sliceclass/sliceclass/internal/classname"
	"github.com/sliceclass/sliceclass/internal/feed"
	"github.com/sliceclass/sliceclass/internal/sliceview"
	"github.com/sliceclass/sliceclass/internal/stopqueue"
)

// The one way a class's controller is built. AddToManager, ClassSet.Serve
// and the test kit's harness (setupWithManager, on a builder of its own)
// all take from here:
//
//   - the same sources (sources), each forwarding controller-runtime's
//     isInInitialList, so that the initial replay is low priority on the
//     priority queue;
//   - the same shutdown policy (shutdownPolicy, shutdown.go): a stopped
//     manager stops deciding at once, and a class stopped by ClassSet.Stop
//     lets its decisions in flight finish;
//   - the same things running beside the controller (runBeside): the class
//     Lease, the inventory sweep and the WithWatch passes, all bound to the
//     controller's context;
//   - the same logger (logger).

// classController is one class's controller and what runs beside it.
type classController struct {
	mgr manager.Manager
	// mc is what the class's set shares: where the class is claimed, its
	// status.class view and ShadowPod watch.
	mc   *companions
	r    *classReconciler
	cfg  *config
	ctrl controller.Controller
	// reads are the objects the sources read from the manager's cache.
	reads []client.Object
	// informers are the sources that add a handler to an informer: their
	// handlers are taken off before the class's runnable returns.
	informers []*informerSource
	// budgets are the parts of the budgets whose feeds the class holds a
	// reference to.
	budgets []*feed.Parts
	// leaseHolder is who holds the class Lease (classlease.Identity), read
	// as the class is registered, not when it starts leading.
	leaseHolder string
	// abort, for a class served by a ClassSet, is the context its
	// decisions in flight run on once Stop has ended its controller: it
	// ends with the set's (the manager stopping) or when Stop gives up
	// waiting (abortStop). Nil for other classes, whose decisions end with
	// the controller's context. Set before the controller starts.
	abort     context.Context
	abortStop context.CancelFunc
}

// newClassController validates and claims class in mc's set, and builds
// its reconciler and controller. comesAndGoes names controllers that come
// and go (ClassSet): controller-runtime's process-wide name check is asked
// the first time the set serves the class, not when it serves it again
// after Stop (the name is the set's then).
func (mc *companions) newClassController(class string, h handler.Handler, opts []Option, comesAndGoes bool) (*classController, error) {
	cc, err := mc.prepare(class, h, opts)
	if err != nil {
		return nil, err
	}
	mgr, cfg := mc.mgr, cc.cfg
	name := controllerName(class)
	copts := controller.Options{
		Reconciler:     cc.shutdownPolicy(),
		RateLimiter:    workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](cfg.backoffBase, cfg.backoffMax),
		LogConstructor: requestLogger(cc.logger()),
	}
	// What the class does not set comes from the manager's controller
	// defaults (ctrl.Options.Controller), then controller-runtime's own.
	if cfg.maxConcurrentGiven {
		copts.MaxConcurrentReconciles = cfg.maxConcurrent
	}
	if comesAndGoes && mc.nameTaken(class) {
		copts.SkipNameValidation = ptr.To(true)
	}
	copts.DefaultFromConfig(mgr.GetControllerOptions())
	if ptr.Deref(copts.UsePriorityQueue, true) {
		copts.NewQueue = priorityQueue(cc.logger())
	}
	c, err := controller.NewUnmanaged(name, copts)
	if err != nil {
		cc.release()
		return nil, fmt.Errorf("class %q: building controller %q: %w", class, name, err)
	}
	for _, s := range cc.sources() {
		if err := c.Watch(s); err != nil {
			cc.release()
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		if is, ok := s.(*informerSource); ok {
			cc.reads = append(cc.reads, is.obj)
		}
	}
	cc.ctrl = c
	mc.setNamed(class)
	return cc, nil
}

// prepare validates a class's registration, claims it and builds its
// reconciler with the manager's client: shared by AddToManager and
// ClassSet, so both apply the same rules.
func (mc *companions) prepare(class string, h handler.Handler, opts []Option) (*classController, error) {
	if err := classname.Validate(class); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("class %q: nil handler", class)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("class %q: invalid options: %w", class, err)
	}
	return mc.bindClass(mc.mgr.GetClient(), class, h, cfg, nil)
}

// bindClass claims class in the set and gives the reconciler that decides
// it everything the set and its manager give beyond its client: the event
// recorder (unless withEventRecorder), the set's status.class view, the
// budgets' feeds (on the set's ShadowPod watch), the namespace store and
// the cache owned objects are read from. It first checks that the
// manager's scheme has what the class reads and writes. r is the reconciler the test kit built (buildReconciler, then
// setupWithManager): it is completed with those and is the one the
// controller runs; nil builds it (AddToManager, ClassSet) on c. On error
// nothing stays claimed or held.
func (mc *companions) bindClass(c client.Client, class string, h handler.Handler, cfg *config, r *classReconciler) (_ *classController, err error) {
	mgr := mc.mgr
	if err := schemeNeedsOf(cfg).check(mgr.GetScheme()); err != nil {
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	if need := mgr.GetControllerOptions().NeedLeaderElection; len(cfg.budgets) > 0 && need != nil && !*need {
		return nil, fmt.Errorf("class %q: %w", class, errBudgetNeedsLeader)
	}
	// Claim the name first: a concurrent registration of the class then
	// fails with ErrClassRegistered before it touches the budgets.
	if err := mc.claim(class); err != nil {
		return nil, err
	}
	cc := &classController{mgr: mgr, mc: mc, cfg: cfg, leaseHolder: classlease.Identity()}
	var st *classState
	if r != nil {
		st = r.classState
	} else if st, err = newClassState(class, cfg); err != nil {
		mc.unclaim(class)
		return nil, err
	}
	defer func() {
		if err != nil {
			cc.releaseParts(st, class)
		}
	}()
	with := collaborators{namespaces: sliceview.NewNamespaces(mgr.GetCache()), ownedReader: mgr.GetCache()}
	if with.views, err = mc.statusClasses(); err != nil {
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	if err := mc.lead(st.meter); err != nil {
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	for _, l := range st.ledgers {
		p, f, err := feed.Acquire(mgr, l, with.views, with.namespaces, mc.pods)
		if err != nil {
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		with.feeds = append(with.feeds, f)
		cc.budgets = append(cc.budgets, p)
	}
	if cfg.recorder == nil {
		with.recorder = mgr.GetEventRecorder(controllerName(class))
	}
	if r == nil {
		if cc.r, err = newReconciler(c, class, h, cfg, st, with); err != nil {
			return nil, err
		}
		return cc, nil
	}
	if err := r.complete(with); err != nil {
		return nil, err
	}
	cc.r = r
	return cc, nil
}

// logger is the class's one logger: WithLogger's, else the manager's, with
// the controller's name.
func (cc *classController) logger() logr.Logger {
	base := cc.mgr.GetLogger()
	if cc.cfg.logger != nil {
		base = *cc.cfg.logger
	}
	return base.WithValues("controller", controllerName(cc.r.scope.class))
}

// sources are everything the class's decisions depend on: its slices, the
// Tenants (tenant rule), the namespaces (the trusted consumer), status.class
// (the effective class), the WithWatch inputs, and the reconciler's own
// queue (budget re-admissions, passes, sweeps).
func (cc *classController) sources() []source.Source {
	r, cache := cc.r, cc.mgr.GetCache()
	infs := []*informerSource{{
		cache: cache, obj: &authv1beta1.ResourceSlice{},
		handler: &crhandler.EnqueueRequestForObject{}, preds: []predicate.Predicate{r.scope.predicate()},
	}}
	if cc.cfg.tenantRule {
		infs = append(infs, &informerSource{
			cache: cache, obj: &authv1beta1.Tenant{},
			handler: r.tenantHandler(), preds: []predicate.Predicate{tenantPredicate()},
		})
	}
	infs = append(infs, &informerSource{
		cache: cache, obj: sliceview.NamespaceMetadata(),
		handler: crhandler.EnqueueRequestsFromMapFunc(r.slicesInNamespace), preds: []predicate.Predicate{namespacePredicate()},
	})
	for _, w := range cc.cfg.watches {
		infs = append(infs, &informerSource{cache: cache, obj: w.obj, handler: r.watchHandler(), preds: w.preds})
	}
	infs = append(infs, cc.ownedSources()...)
	views := viewSource(r.scope.status, r.scope)
	out := make([]source.Source, 0, len(infs)+2)
	for _, s := range infs {
		out = append(out, s)
	}
	infs = append(infs, views.inner)
	cc.informers = infs
	return append(out, views, r.ownSource())
}

// stopSources takes the sources' handlers off the informers, and waits
// for that.
func (cc *classController) stopSources() {
	for _, s := range cc.informers {
		s.stop()
	}
}

// run runs the controller and what runs beside it until ctx ends, then
// waits for them all.
func (cc *classController) run(ctx context.Context) error {
	ctx = log.IntoContext(ctx, cc.logger())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cc.runBeside(ctx)
	}()
	err := cc.ctrl.Start(ctx)
	cancel()
	wg.Wait()
	cc.stopSources()
	return err
}

// runBeside runs the class Lease, the inventory sweep and the WithWatch
// passes until ctx ends.
func (cc *classController) runBeside(ctx context.Context) {
	var wg sync.WaitGroup
	goRun := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	if ns := cc.cfg.leaseNamespace; ns != "" {
		l := classlease.New(cc.mgr.GetAPIReader(), cc.mgr.GetClient(), cc.r.scope.class, ns, cc.leaseHolder)
		goRun(func(ctx context.Context) { _ = l.Start(ctx) })
	}
	goRun(func(ctx context.Context) { cc.r.sweepLoop(ctx, cc.mgr.GetCache().WaitForCacheSync) })
	goRun(func(ctx context.Context) { cc.r.sweepOwnedLoop(ctx, cc.mgr.GetCache().WaitForCacheSync) })
	if len(cc.cfg.watches) > 0 {
		goRun(func(ctx context.Context) { cc.r.passes.run(ctx, cc.r.runPass) })
	}
	wg.Wait()
}

// release gives back what the class holds in the manager: first its
// budgets, then its name, so that a concurrent Serve of the class finds
// both free or neither.
func (cc *classController) release() { cc.releaseParts(cc.r.classState, cc.r.scope.class) }

func (cc *classController) releaseParts(st *classState, class string) {
	st.detach()
	for _, p := range cc.budgets {
		p.Release()
	}
	cc.budgets = nil
	cc.mc.unclaim(class)
}

// managedClass runs an AddToManager class as a manager runnable: on the
// leader only (unless the manager's controller options say otherwise), warm
// before election when the manager enables warm-up.
type managedClass struct{ cc *classController }

// Start implements manager.Runnable. When the manager stops, the class is
// released: a manager does not start twice, and its budgets may be drawn
// from by another.
func (m managedClass) Start(ctx context.Context) error {
	defer m.cc.release()
	return m.cc.run(ctx)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (m managedClass) NeedLeaderElection() bool {
	if le, ok := m.cc.ctrl.(manager.LeaderElectionRunnable); ok {
		return le.NeedLeaderElection()
	}
	return true
}

// Warmup implements manager.WarmupRunnable.
func (m managedClass) Warmup(ctx context.Context) error {
	if w, ok := m.cc.ctrl.(interface{ Warmup(context.Context) error }); ok {
		return w.Warmup(ctx)
	}
	return nil
}

// besideRunnable runs what runs beside a controller a user built
// (setupWithManager), on the leader only; when the manager stops it takes
// the controller's handlers off the informers before it returns.
type besideRunnable struct{ cc *classController }

// Start implements manager.Runnable.
func (b besideRunnable) Start(ctx context.Context) error {
	b.cc.runBeside(log.IntoContext(ctx, b.cc.logger()))
	<-ctx.Done()
	b.cc.stopSources()
	b.cc.release()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (besideRunnable) NeedLeaderElection() bool { return true }

// setupWithManager completes b, a builder of the test kit's own (from
// ctrl.NewControllerManagedBy(mgr), with their options, event filters and
// extra watches), into the controller that decides r's class in set's
// manager with r: it names it controllerName(class), adds every watch r
// needs (the class's slices, Tenants, namespaces, status.class, and r's own
// queue for budget re-admissions and inventory sweeps, with the same
// predicates and the same shutdown policy as AddToManager), and runs the
// inventory sweep beside it. b must be a builder of set's manager and must
// not have called For. Call it once per class, before the manager starts;
// the class is claimed in set (errors.Is ErrClassRegistered when the set
// already serves it or set it up), but not served by it: set.Stop and
// set.Classes do not see it.
//
// r is the reconciler the controller runs, and it is completed here with
// what set and its manager give: the manager's event recorder (unless
// withEventRecorder), the set's status.class view and ShadowPod watch, the
// budgets' feeds (which count the budgets from then on), and the manager's
// namespace and owned-object caches. Its client, class, handler and options
// stay those buildReconciler was given.
func (r *classReconciler) setupWithManager(set *ClassSet, b *builder.Builder) error {
	if set == nil || b == nil {
		return fmt.Errorf("class %q: the harness needs a ClassSet and a builder", r.scope.class)
	}
	mgr, mc := set.mgr, set.mc
	cc, err := mc.bindClass(r.client, r.scope.class, r.handler, r.cfg, r)
	if err != nil {
		return err
	}
	class := r.scope.class
	b = b.Named(controllerName(class))
	for _, s := range cc.sources() {
		b = b.WatchesRawSource(s)
	}
	if err := b.Complete(cc.shutdownPolicy()); err != nil {
		cc.release()
		return fmt.Errorf("class %q: building controller %q: %w", class, controllerName(class), err)
	}
	if err := mgr.Add(besideRunnable{cc: cc}); err != nil {
		return fmt.Errorf("class %q: adding the inventory sweep to the manager: %w", class, err)
	}
	return nil
}

// priorityQueue builds a class controller's queue as controller-runtime
// does when its priority queue is on, wrapped so that shutting it down
// strands no worker (internal/stopqueue: controller-runtime#3538, in every
// release before v0.25.0, the lowest we support among them). log is the class's logger, which already names the controller.
// Its wake-up items name no object: an object's name is never empty.
func priorityQueue(log logr.Logger) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
			o.Log = log
			o.RateLimiter = rl
		})
		return stopqueue.Wrap(q, func(i int) reconcile.Request {
			return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "\x00stopqueue-" + strconv.Itoa(i)}}
		})
	}
}
