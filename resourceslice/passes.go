package resourceslice

import (
	"context"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// watchCoalesce is how long a WithWatch pass waits after the first event,
// so a burst of changes causes one pass.
const watchCoalesce = time.Second

// passes schedules WithWatch passes: any number of requests within
// watchCoalesce of the first cause one pass. It runs in the class
// controller's context (run), so nothing fires after the class stops.
type passes struct {
	requests chan struct{}
	coalesce time.Duration
}

func newPasses() *passes {
	return &passes{requests: make(chan struct{}, 1), coalesce: watchCoalesce}
}

// request asks for a pass; it never blocks.
func (p *passes) request() {
	select {
	case p.requests <- struct{}{}:
	default: // one is already asked for
	}
}

// run calls pass once per coalesced burst of requests until ctx ends.
func (p *passes) run(ctx context.Context, pass func(context.Context)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.requests:
		}
		t := time.NewTimer(p.coalesce)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		select { // requests during the wait are served by this pass
		case <-p.requests:
		default:
		}
		pass(ctx)
	}
}

// watchHandler turns any event on a watched input into a pass request.
func (r *classReconciler) watchHandler() crhandler.EventHandler {
	type q = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return crhandler.Funcs{
		CreateFunc:  func(context.Context, event.CreateEvent, q) { r.passes.request() },
		UpdateFunc:  func(context.Context, event.UpdateEvent, q) { r.passes.request() },
		DeleteFunc:  func(context.Context, event.DeleteEvent, q) { r.passes.request() },
		GenericFunc: func(context.Context, event.GenericEvent, q) { r.passes.request() },
	}
}

// runPass enqueues every slice the class serves; unchanged decisions cost
// no write.
func (r *classReconciler) runPass(ctx context.Context) {
	keys, err := r.pass(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "WithWatch pass failed; the next change of a watched input tries again")
		return
	}
	for _, k := range keys {
		r.enqueue(k)
	}
}

// Pass lets every slice the controller gave up on (WithMaxRetries) be
// tried again, by starting a new retry epoch, and returns every slice the
// class serves (from the reader the reconciler was built with): the
// re-evaluation pass a WithWatch input's change starts. Reconciling each
// key writes only the decisions that change. Call it to drive a pass in a
// test.
func (r *classReconciler) pass(ctx context.Context) ([]types.NamespacedName, error) {
	r.retries.newEpoch()
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
