package resourceslice

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/handler"
)

// WithEventRecorder is withEventRecorder, for this package's external
// tests.
var WithEventRecorder = withEventRecorder

// NewReconciler builds a class's reconciler on c alone, outside any
// manager, for this package's external tests (the test kit's harness
// reaches the same through internal/classhook).
func NewReconciler(c client.Client, class string, h handler.Handler, opts ...DecisionOption) (reconcile.Reconciler, error) {
	r, err := buildReconciler(c, class, h, opts...)
	if err != nil {
		return nil, err
	}
	return r, nil
}
