package resourceslice

import (
	"context"
	"fmt"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
)

// releases remembers which slices the handler may hold something for
// (handler.Releaser): those Accepted in the class, and those a
// handler.Inventory listed. A slice's exit from Accepted calls Release once.
type releases struct {
	mu      sync.Mutex
	holding map[types.NamespacedName]bool
	seeded  bool
}

func newReleases() *releases {
	return &releases{holding: map[types.NamespacedName]bool{}}
}

// seed marks, once, what list returns as held, so that a restarted
// controller releases what its predecessor accepted.
func (t *releases) seed(list func() ([]types.NamespacedName, error)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seeded {
		return nil
	}
	keys, err := list()
	if err != nil {
		return err
	}
	for _, k := range keys {
		t.holding[k] = true
	}
	t.seeded = true
	return nil
}

// hold marks keys as held.
func (t *releases) hold(keys ...types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		t.holding[k] = true
	}
}

// exit reports whether key was held, and forgets it.
func (t *releases) exit(key types.NamespacedName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.holding[key]
	delete(t.holding, key)
	return was
}

func (r *classReconciler) releaser() handler.Releaser {
	if r.cfg.dryRun {
		return nil
	}
	rel, _ := r.handler.(handler.Releaser)
	return rel
}

// seedHolding marks, once, every Accepted slice of the class as held.
func (r *classReconciler) seedHolding(ctx context.Context) error {
	err := r.releases.seed(func() ([]types.NamespacedName, error) {
		held, err := r.held(ctx)
		if err != nil {
			return nil, err
		}
		keys := make([]types.NamespacedName, 0, len(held))
		for k := range held {
			keys = append(keys, k)
		}
		return keys, nil
	})
	if err != nil {
		return fmt.Errorf("listing the class's Accepted slices: %w", err)
	}
	return nil
}

// releaseContext is ctx with the trusted consumer of rs (see Consumer), for
// a Release the reconcile may call before it read the consumer (the slice
// left the class); ctx as it is when rs is nil (the slice is gone) or the
// handler releases nothing.
func (r *classReconciler) releaseContext(ctx context.Context, rs *authv1beta1.ResourceSlice) (context.Context, error) {
	if rs == nil || r.releaser() == nil {
		return ctx, nil
	}
	c, err := r.consumerOf(ctx, rs)
	if err != nil {
		return ctx, err
	}
	return withConsumer(ctx, c), nil
}

// settleHolding records the decision now on the server for key: an Accepted
// slice is held; any other state is an exit that calls Release if the slice
// was held. An error means Release failed and must be retried.
func (r *classReconciler) settleHolding(ctx context.Context, key types.NamespacedName, accepted bool) error {
	rel := r.releaser()
	if rel == nil {
		return nil
	}
	if accepted {
		r.releases.hold(key)
		return nil
	}
	if !r.releases.exit(key) {
		return nil
	}
	if err := rel.Release(ctx, key); err != nil {
		r.releases.hold(key) // retried with the reconcile
		r.metrics.errors.WithLabelValues(r.scope.class, errKindRelease).Inc()
		return fmt.Errorf("releasing what the handler holds: %w", err)
	}
	log.FromContext(ctx).V(1).Info("released")
	return nil
}

// SweepInventory marks as held every key a handler.Inventory (that is also
// a handler.Releaser) says it holds, and returns them: reconciling each key
// then releases those whose slice is gone or no longer Accepted in the
// class. The SDK runs it after the cache syncs and at the
// resync period, enqueueing the keys; call it yourself to drive a sweep in a
// test. It returns nothing for other handlers, and in a dry run.
func (r *classReconciler) sweepInventory(ctx context.Context) ([]types.NamespacedName, error) {
	inv, ok := r.handler.(handler.Inventory)
	if !ok || r.releaser() == nil {
		return nil, nil
	}
	keys, err := inv.Holding(ctx)
	if err != nil {
		return nil, fmt.Errorf("class %q: listing what the handler holds: %w", r.scope.class, err)
	}
	r.releases.hold(keys...)
	return keys, nil
}

// sweepLoop sweeps the inventory once the caches have synced (synced), then
// at the resync period, until ctx ends; the keys go to the controller's
// queue.
func (r *classReconciler) sweepLoop(ctx context.Context, synced func(context.Context) bool) {
	if _, ok := r.handler.(handler.Inventory); !ok || r.releaser() == nil || !synced(ctx) {
		return
	}
	select {
	case <-r.queueReady:
	case <-ctx.Done():
		return
	}
	for {
		keys, err := r.sweepInventory(ctx)
		for _, k := range keys {
			r.enqueue(k)
		}
		if err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "inventory sweep failed; retrying at the next period")
		}
		if r.cfg.resync <= 0 {
			return
		}
		t := time.NewTimer(r.cfg.resync)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// held lists what the class's Accepted slices hold, from the cache: the
// budget's rebuild after a restart or a failover.
func (r *classReconciler) held(ctx context.Context) (map[types.NamespacedName]corev1.ResourceList, error) {
	var list authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[types.NamespacedName]corev1.ResourceList{}
	for i := range list.Items {
		rs := &list.Items[i]
		if r.scope.serves(rs) && conditions.IsAccepted(rs) {
			out[client.ObjectKeyFromObject(rs)] = rs.Status.Resources.DeepCopy()
		}
	}
	return out, nil
}
