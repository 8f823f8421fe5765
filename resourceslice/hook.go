package resourceslice

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/classhook"
)

// The test kit's seam (internal/classhook): the harness builds a class on
// a builder of its own and drives its passes and sweeps, which production
// code reaches only through the controller.
func init() {
	classhook.Build = func(c client.Client, class string, h handler.Handler, rec events.EventRecorder, opts []any, set any, b *builder.Builder) (classhook.Class, error) {
		dopts := make([]DecisionOption, len(opts), len(opts)+1)
		for i, o := range opts {
			d, ok := o.(DecisionOption)
			if !ok {
				return nil, fmt.Errorf("class %q: option %d is a %T, not a resourceslice.DecisionOption", class, i, o)
			}
			dopts[i] = d
		}
		cs, ok := set.(*ClassSet)
		if !ok || cs == nil {
			return nil, fmt.Errorf("class %q: the harness needs a *resourceslice.ClassSet, got %T", class, set)
		}
		if rec != nil {
			dopts = append([]DecisionOption{withEventRecorder(rec)}, dopts...)
		}
		r, err := buildReconciler(c, class, h, dopts...)
		if err != nil {
			return nil, err
		}
		if err := r.setupWithManager(cs, b); err != nil {
			return nil, err
		}
		return hookedClass{r}, nil
	}
}

// hookedClass is a class's reconciler as the harness drives it.
type hookedClass struct{ *classReconciler }

// Pass implements classhook.Class.
func (h hookedClass) Pass(ctx context.Context) ([]types.NamespacedName, error) {
	return h.pass(ctx)
}

// SweepInventory implements classhook.Class.
func (h hookedClass) SweepInventory(ctx context.Context) ([]types.NamespacedName, error) {
	return h.sweepInventory(ctx)
}
