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

// Construct once (issue 29): SetupWithManager gives the controller a
// Reconciler built with the manager's collaborators, and leaves the one it
// is called on exactly as NewReconciler built it; the two share what a
// class remembers, and the class is claimed in the manager.
func TestSetupWithManagerLeavesTheReconcilerAsBuilt(t *testing.T) {
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
	assert.Equal(t, before.recorder, r.recorder, "the recorder is the one NewReconciler chose")
	assert.Nil(t, r.scope.status, "no status.class view was given to r afterwards")
	assert.Empty(t, r.feeds, "no budget feed was given to r afterwards")
	assert.Nil(t, r.namespaces, "no namespace store was given to r afterwards")
	assert.Same(t, before.owned, r.owned)
	assert.Same(t, before.classState, r.classState)

	mc, err := companionsOf(mgr)
	require.NoError(t, err)
	assert.True(t, mc.claims[class], "the class is claimed in the manager's companions")
	require.Len(t, mc.feeds, 1, "the controller's Reconciler draws through the manager's feed of the budget")
	assert.NotNil(t, mc.views, "the manager's status.class view is built for the controller")
	err = r.SetupWithManager(mgr, ctrl.NewControllerManagedBy(mgr))
	assert.ErrorIs(t, err, ErrClassRegistered, "a class set up twice in one manager")
}
