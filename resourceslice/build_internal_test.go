package resourceslice

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// One Reconciler per class (issue 36): SetupWithManager completes the
// Reconciler it is called on with the manager's collaborators (its
// client, recorder and state stay as NewReconciler built them), the
// controller runs that one, and the class is claimed in the manager.
func TestSetupWithManagerCompletesTheReconciler(t *testing.T) {
	const class = "setup-gold"
	mgr := envkit.UnreachableManager(t)
	b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	require.NoError(t, err)
	grant := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	r, err := NewReconciler(mgr.GetClient(), class, grant, WithBudget(b), WithMetricsRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	before := *r

	require.NoError(t, r.SetupWithManager(mgr, ctrl.NewControllerManagedBy(mgr)))

	assert.Equal(t, before.client, r.client, "the client, which writes the status, is the one NewReconciler was given")
	assert.NotEqual(t, before.recorder, r.recorder, "without WithEventRecorder, the manager's recorder records")
	assert.NotNil(t, r.scope.status, "the status.class view was given to r")
	require.Len(t, r.feeds, 1, "r draws through the budget's feed")
	assert.NotNil(t, r.namespaces, "the namespace store was given to r")
	assert.Same(t, before.classState, r.classState)

	mc, err := companionsOf(mgr)
	require.NoError(t, err)
	assert.True(t, mc.claims[class], "the class is claimed in the manager")
	err = r.SetupWithManager(mgr, ctrl.NewControllerManagedBy(mgr))
	assert.ErrorIs(t, err, ErrClassRegistered, "a class set up twice in one manager")
}
