package gpupool

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// GPU is the resource the class sells.
const GPU corev1.ResourceName = "nvidia.com/gpu"

// Condition reasons the policy sets. An offer that does not fit is denied
// by the budget (budget.ReasonExhausted, budget.ReasonConsumerLimit).
const (
	// ReasonGranted: the slice is offered its GPUs, pinned to the pool.
	ReasonGranted = "GPUsGranted"
	// ReasonNoGPU: the slice asks for no GPU (Denied).
	ReasonNoGPU = "NoGPURequested"
)

// New returns the policy of a class drawing from pool, a node-pool budget
// whose selector is made of key=value terms (a nodeSelector can express no
// other). Pass pool to the class with resourceslice.WithBudget too: the
// handler decides, the budget admits. The offer is what the slice asks of
// the resources pool counts (budget.WithResources), GPUs included; the
// others are dropped. Handle fails terminally if pool cannot pin (not a
// node pool, or a selector that is not key=value) or does not
// count GPUs: a setup error.
func New(pool *budget.Budget) handler.Handler {
	return handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		gpus := rs.Spec.Resources[GPU]
		if gpus.Sign() <= 0 {
			rs.Status.Resources = nil
			conditions.Deny(rs, ReasonNoGPU, fmt.Sprintf("the slice asks for no %s: class pool %q sells GPUs", GPU, pool.Name()))
			return ctrl.Result{}, nil
		}
		total := pool.Total()
		if _, ok := total[GPU]; !ok {
			return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("pool %q does not count %s: add it to budget.WithResources", pool.Name(), GPU))
		}
		offer := corev1.ResourceList{}
		for name := range total {
			if q, ok := rs.Spec.Resources[name]; ok && q.Sign() > 0 {
				offer[name] = q.DeepCopy()
			}
		}
		rs.Status.Resources = offer
		if err := pool.PinToNodePool(rs); err != nil {
			return ctrl.Result{}, reconcile.TerminalError(err)
		}
		conditions.Accept(rs, ReasonGranted, fmt.Sprintf("%s %s for consumer %s from pool %q",
			gpus.String(), GPU, resourceslice.Consumer(ctx), pool.Name()))
		return ctrl.Result{}, nil
	})
}
