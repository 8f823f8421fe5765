package resourceslice

import (
	"context"
	"fmt"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
)

// watchCoalesce is how long a WithWatch pass waits after the first event,
// so a burst of changes causes one pass.
const watchCoalesce = time.Second

// lifecycle is what the Reconciler remembers between reconciles of one
// class: which slices the handler may hold something for (release hooks),
// which failing slices it gave up on, and the WithWatch passes.
type lifecycle struct {
	mu sync.Mutex
	// holding: slices that were Accepted in this class (or that the
	// handler's inventory listed), whose exit must call Release.
	holding map[types.NamespacedName]bool
	seeded  bool
	// failures counts consecutive handler failures per slice.
	failures map[types.NamespacedName]*failure
	// pass counts WithWatch passes; passPending is set while one waits.
	pass        int
	passPending bool
}

type failure struct {
	count  int
	gaveUp bool
	rv     string
	at     time.Time
	pass   int
}

func newLifecycle() *lifecycle {
	return &lifecycle{holding: map[types.NamespacedName]bool{}, failures: map[types.NamespacedName]*failure{}}
}

// --- Release hooks ---

func (r *Reconciler) releaser() handler.Releaser {
	if r.cfg.dryRun {
		return nil
	}
	rel, _ := r.handler.(handler.Releaser)
	return rel
}

// seedHolding marks, once, every Accepted slice of the class as held, so a
// restarted controller releases what its predecessor accepted.
func (r *Reconciler) seedHolding() error {
	lc := r.life
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.seeded {
		return nil
	}
	held, err := r.held()
	if err != nil {
		return fmt.Errorf("listing the class's Accepted slices: %w", err)
	}
	for key := range held {
		lc.holding[key] = true
	}
	lc.seeded = true
	return nil
}

// settleHolding records the decision now on the server for key: an Accepted
// slice is held; any other state is an exit that calls Release if the slice
// was held. An error means Release failed and must be retried.
func (r *Reconciler) settleHolding(ctx context.Context, key types.NamespacedName, accepted bool) error {
	rel := r.releaser()
	if rel == nil {
		return nil
	}
	lc := r.life
	lc.mu.Lock()
	was := lc.holding[key]
	if accepted {
		lc.holding[key] = true
	}
	lc.mu.Unlock()
	if accepted || !was {
		return nil
	}
	if err := rel.Release(ctx, key); err != nil {
		r.metrics.errors.WithLabelValues(r.scope.class, errKindRelease).Inc()
		return fmt.Errorf("releasing what the handler holds: %w", err)
	}
	log.FromContext(ctx).V(1).Info("released")
	lc.mu.Lock()
	delete(lc.holding, key)
	lc.mu.Unlock()
	return nil
}

// SweepInventory asks a handler that implements handler.Inventory (and
// handler.Releaser) what it holds, marks each key as held and returns them:
// reconciling each key then releases those whose slice is gone or no longer
// Accepted in the class. AddToManager and ClassSet run it after the cache
// syncs and at the resync period, enqueueing the keys; call it yourself to
// drive a sweep in a test. It returns nothing for other handlers, and in a
// dry run.
func (r *Reconciler) SweepInventory(ctx context.Context) ([]types.NamespacedName, error) {
	inv, ok := r.handler.(handler.Inventory)
	if !ok || r.releaser() == nil {
		return nil, nil
	}
	keys, err := inv.Holding(ctx)
	if err != nil {
		return nil, fmt.Errorf("class %q: listing what the handler holds: %w", r.scope.class, err)
	}
	lc := r.life
	lc.mu.Lock()
	for _, k := range keys {
		lc.holding[k] = true
	}
	lc.mu.Unlock()
	return keys, nil
}

func (r *Reconciler) sweepInventory(ctx context.Context) error {
	keys, err := r.SweepInventory(ctx)
	for _, k := range keys {
		r.enqueue(k)
	}
	return err
}

// inventoryRunnable sweeps once the manager's caches have synced, then at
// the resync period.
type inventoryRunnable struct {
	r      *Reconciler
	synced func(context.Context) bool
}

// Start implements manager.Runnable.
func (i inventoryRunnable) Start(ctx context.Context) error {
	if !i.synced(ctx) {
		return nil
	}
	// The keys go to the controller's queue: wait until its source started.
	select {
	case <-i.r.queueReady:
	case <-ctx.Done():
		return nil
	}
	logger := log.FromContext(ctx).WithValues("controller", ControllerName(i.r.scope.class))
	for {
		if err := i.r.sweepInventory(ctx); err != nil {
			logger.Error(err, "inventory sweep failed; retrying at the next period")
		}
		period := i.r.cfg.resync
		if period <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(period):
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader releases.
func (inventoryRunnable) NeedLeaderElection() bool { return true }

// --- Bounded handlers ---

// skipGivenUp reports whether the slice is one the controller gave up on
// and nothing has happened since that warrants another try: no change to
// the slice, no resync period elapsed, no WithWatch pass.
func (r *Reconciler) skipGivenUp(key types.NamespacedName, rv string) bool {
	if r.cfg.maxRetries == 0 {
		return false
	}
	lc := r.life
	lc.mu.Lock()
	defer lc.mu.Unlock()
	f := lc.failures[key]
	if f == nil || !f.gaveUp {
		return false
	}
	resynced := r.cfg.resync > 0 && time.Since(f.at) >= r.cfg.resync
	if f.rv == rv && !resynced && f.pass == lc.pass {
		return true
	}
	delete(lc.failures, key)
	return false
}

// noteFailure counts a handler failure; it reports whether the controller
// gives up on the slice now.
func (r *Reconciler) noteFailure(key types.NamespacedName, rv string) bool {
	if r.cfg.maxRetries == 0 {
		return false
	}
	lc := r.life
	lc.mu.Lock()
	defer lc.mu.Unlock()
	f := lc.failures[key]
	if f == nil {
		f = &failure{}
		lc.failures[key] = f
	}
	f.count++
	if f.count < r.cfg.maxRetries {
		return false
	}
	f.gaveUp, f.rv, f.at, f.pass = true, rv, time.Now(), lc.pass
	return true
}

func (r *Reconciler) noteSuccess(key types.NamespacedName) {
	if r.cfg.maxRetries == 0 {
		return
	}
	r.life.mu.Lock()
	delete(r.life.failures, key)
	r.life.mu.Unlock()
}

// --- WithWatch passes ---

// watchHandler turns any event on a watched input into one coalesced pass.
func (r *Reconciler) watchHandler() crhandler.EventHandler {
	trigger := func() { r.requestPass() }
	return crhandler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			trigger()
		},
		UpdateFunc: func(context.Context, event.UpdateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			trigger()
		},
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			trigger()
		},
		GenericFunc: func(context.Context, event.GenericEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			trigger()
		},
	}
}

// requestPass schedules a pass over the class's slices watchCoalesce from
// now, unless one is already scheduled.
func (r *Reconciler) requestPass() {
	lc := r.life
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.passPending {
		return
	}
	lc.passPending = true
	time.AfterFunc(watchCoalesce, r.runPass)
}

// runPass enqueues every slice the class serves; unchanged decisions cost
// no write.
func (r *Reconciler) runPass() {
	lc := r.life
	lc.mu.Lock()
	lc.passPending = false
	lc.mu.Unlock()
	keys, err := r.Pass(context.Background())
	if err != nil {
		return
	}
	for _, k := range keys {
		r.enqueue(k)
	}
}

// Pass starts a re-evaluation pass, as a WithWatch input's change does: it
// returns every slice the class serves (from the reader the Reconciler was
// built with) and lets slices the controller gave up on be tried again.
// Reconciling each key writes only the decisions that change. Call it to
// drive a pass in a test.
func (r *Reconciler) Pass(ctx context.Context) ([]types.NamespacedName, error) {
	r.life.mu.Lock()
	r.life.pass++
	r.life.mu.Unlock()
	r.metrics.passes.WithLabelValues(r.scope.class).Inc()
	var list authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("class %q: listing slices for a pass: %w", r.scope.class, err)
	}
	var keys []types.NamespacedName
	for i := range list.Items {
		if r.scope.serves(&list.Items[i]) {
			keys = append(keys, client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	return keys, nil
}

func (r *Reconciler) enqueue(key types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: key})
	}
}

// accepted reports whether desired, as saved, is an acceptance.
func accepted(rs *authv1beta1.ResourceSlice) bool { return conditions.IsAccepted(rs) }
