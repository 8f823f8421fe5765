package envkit_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// ExampleStartManager's scenario, run: the kit's pieces together make a
// cluster a class decides in as it would on a provider. The pool is the
// two Ready nodes only (a cordoned one and a node outside the selector do
// not count), the consumer is the tenant namespace's, and Liqo's
// QuotaCreator enforces the one grant that fits.
func TestKitTogether(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	four := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	gold := envkit.WithNodeLabels(map[string]string{"pool": "kit"})
	for _, name := range []string{"kit-1", "kit-2"} {
		_, err := envkit.CreateNode(ctx, cp.Client, name, four, gold)
		require.NoError(t, err)
	}
	_, err := envkit.CreateNode(ctx, cp.Client, "kit-cordoned", four, gold, envkit.Unschedulable())
	require.NoError(t, err)
	_, err = envkit.CreateNode(ctx, cp.Client, "kit-other", four)
	require.NoError(t, err)
	ns, err := envkit.CreateConsumer(ctx, cp.Client, "kit-alice")
	require.NoError(t, err)

	var pool *budget.Budget
	consumers := make(chan string, 4)
	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		pool, err = budget.NewNodePool(mgr, "kit", labels.SelectorFromSet(labels.Set{"pool": "kit"}),
			budget.WithResources(corev1.ResourceCPU))
		if err != nil {
			return err
		}
		if err := envkit.AddLiqoQuotaCreator(mgr); err != nil {
			return err
		}
		seeConsumer := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
			select {
			case consumers <- resourceslice.Consumer(ctx):
			default:
			}
			return grantAll(ctx, rs)
		})
		return resourceslice.AddToManager(mgr, "kit", seeConsumer, resourceslice.WithBudget(pool))
	})

	for _, name := range []string{"a", "b"} {
		rs := slicetest.NewSlice(name, slicetest.WithNamespace(ns), slicetest.WithConsumer("kit-alice"),
			slicetest.WithClass("kit"), slicetest.WithRequest(corev1.ResourceCPU, "6"))
		require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	}
	var slices authv1beta1.ResourceSliceList
	var quotas offloadingv1beta1.QuotaList
	envkit.Eventually(t, "both slices decided and one Quota", func() bool {
		require.NoError(t, cp.Client.List(ctx, &slices, client.InNamespace(ns)))
		require.NoError(t, cp.Client.List(ctx, &quotas, client.InNamespace(ns)))
		decided := 0
		for i := range slices.Items {
			if conditions.IsDecided(&slices.Items[i]) {
				decided++
			}
		}
		return decided == 2 && len(quotas.Items) == 1
	})
	total := pool.Total()
	assert.True(t, total.Cpu().Equal(resource.MustParse("8")), "the pool is the two Ready, schedulable nodes: %v", total)
	var accepted, waiting []string
	for i := range slices.Items {
		rs := &slices.Items[i]
		if conditions.IsAccepted(rs) {
			accepted = append(accepted, rs.Name)
			continue
		}
		waiting = append(waiting, rs.Name)
		assert.Equal(t, budget.ReasonExhausted, conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).Reason)
	}
	assert.Len(t, accepted, 1, "one 6-CPU slice fits 8 CPUs")
	assert.Len(t, waiting, 1)
	q := quotas.Items[0].Spec.Resources[corev1.ResourceCPU]
	assert.True(t, q.Equal(resource.MustParse("6")), "Liqo's Quota enforces the grant: %s", q.String())
	assert.Equal(t, "kit-alice", <-consumers, "the consumer is the tenant namespace's label")
}
