package resourceslice_test

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
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/feed"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// What a budget holds hangs off the budget (issue 36): the first manager
// whose class draws from it binds it; a class of a second manager is
// refused with an error that says why while the first runs, and accepted
// once it stopped. Classes of the binding manager share one feed.
func TestABudgetIsBoundToOneManager(t *testing.T) {
	cp := controlplane.Start(t)
	grant := handler.Func(func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error) { return ctrl.Result{}, nil })
	reg := func() resourceslice.Option { return resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()) }
	b, err := budget.New("bound", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	require.NoError(t, err)

	opts := envkit.ManagerOptions(t, cp.Scheme)
	opts.Metrics.BindAddress = "0"
	first, err := manager.New(cp.Config, opts)
	require.NoError(t, err)
	require.NoError(t, resourceslice.AddToManager(first, "gold", grant, resourceslice.WithBudget(b), reg()))
	require.NoError(t, resourceslice.AddToManager(first, "silver", grant, resourceslice.WithBudget(b), reg()), "classes of one manager share the budget")
	pods, err := feed.NewPods(first)
	require.NoError(t, err)
	parts, f, err := feed.Acquire(first, ledger.Of(b), nil, nil, pods)
	require.NoError(t, err)
	assert.Equal(t, 3, parts.Classes(), "one feed, drawn from by both classes (and this reference)")
	_, again, err := feed.Acquire(first, ledger.Of(b), nil, nil, pods)
	require.NoError(t, err)
	assert.Same(t, f, again, "the budget keeps one feed in its manager")
	parts.Release()
	parts.Release()

	second := envkit.UnreachableManager(t)
	err = resourceslice.AddToManager(second, "bronze", grant, resourceslice.WithBudget(b), reg())
	require.ErrorIs(t, err, ledger.ErrBoundElsewhere, "a second manager while the first has not stopped")
	assert.ErrorContains(t, err, `budget "bound"`)
	assert.ErrorContains(t, err, "one budget per manager")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Start(ctx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, testwait.Timeout)
	require.True(t, first.GetCache().WaitForCacheSync(syncCtx))
	cancelSync()
	<-first.Elected()
	cancel()
	require.NoError(t, <-done)

	require.NoError(t, resourceslice.AddToManager(second, "bronze", grant, resourceslice.WithBudget(b), reg()), "once the first manager stopped, the budget is free")
}
