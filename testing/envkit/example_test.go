package envkit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
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
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// grantAll offers what a slice asks for; the budget decides whether it fits.
var grantAll = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
})

// A class on a node pool, tested on a real API server: two Ready nodes of
// 4 CPUs make the pool, a consumer peers, and of its two slices of 6 CPUs
// one fits. Liqo's QuotaCreator runs beside the class, so the test also
// sees the Quota that enforces the grant. Examples that need envtest
// binaries have no checked output.
func ExampleStartManager() {
	t := &testing.T{} // in a test, your *testing.T
	cp := controlplane.Start(t)
	ctx := context.Background()

	for _, name := range []string{"n1", "n2"} {
		_, err := envkit.CreateNode(ctx, cp.Client, name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			envkit.WithNodeLabels(map[string]string{"pool": "gold"}))
		require.NoError(t, err)
	}
	ns, err := envkit.CreateConsumer(ctx, cp.Client, "alice")
	require.NoError(t, err)

	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		pool, err := budget.NewNodePool(mgr, "gold", labels.SelectorFromSet(labels.Set{"pool": "gold"}),
			budget.WithResources(corev1.ResourceCPU))
		if err != nil {
			return err
		}
		if err := envkit.AddLiqoQuotaCreator(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "gold", grantAll, resourceslice.WithBudget(pool))
	})

	for _, name := range []string{"a", "b"} {
		rs := slicetest.NewSlice(name, slicetest.WithNamespace(ns), slicetest.WithConsumer("alice"),
			slicetest.WithClass("gold"), slicetest.WithRequest(corev1.ResourceCPU, "6"))
		require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	}
	envkit.Eventually(t, "one slice Accepted, one waiting, one Quota", func() bool {
		var slices authv1beta1.ResourceSliceList
		require.NoError(t, cp.Client.List(ctx, &slices, client.InNamespace(ns)))
		var quotas offloadingv1beta1.QuotaList
		require.NoError(t, cp.Client.List(ctx, &quotas, client.InNamespace(ns)))
		accepted, denied := 0, 0
		for i := range slices.Items {
			switch {
			case conditions.IsAccepted(&slices.Items[i]):
				accepted++
			case conditions.IsDecided(&slices.Items[i]):
				denied++
			}
		}
		return accepted == 1 && denied == 1 && len(quotas.Items) == 1
	})
}

// A wait says what it waits for: on a timeout (WaitTimeout, two minutes)
// the test fails with "timed out after 2m0s waiting for the third check".
// It returns at the first check that holds. The condition runs on the
// test's goroutine, so it may call require.
func ExampleEventually() {
	t := &testing.T{} // in a test, your *testing.T
	checks := 0
	envkit.Eventually(t, "the third check", func() bool {
		checks++
		return checks == 3
	})
	fmt.Println(checks)
	// Output: 3
}

// A wait for "nothing happens": Consistently checks the condition every
// 50 ms for the duration, and fails the test, naming what stopped holding
// and when, at the first check that does not hold.
func ExampleConsistently() {
	t := &testing.T{} // in a test, your *testing.T
	writes := 0
	envkit.Consistently(t, 100*time.Millisecond, "no second write", func() bool { return writes == 0 })
	fmt.Println(writes)
	// Output: 0
}

// A drain, as an operator does it: Liqo then denies the tenant's slices,
// and the SDK's tenant rule keeps a class from accepting them again.
func ExampleSetTenantCondition() {
	t := &testing.T{} // in a test, your *testing.T
	cp := controlplane.Start(t)
	ctx := context.Background()
	ns, err := envkit.CreateConsumer(ctx, cp.Client, "bob")
	require.NoError(t, err)
	require.NoError(t, envkit.SetTenantCondition(ctx, cp.Client, client.ObjectKey{Namespace: ns, Name: "bob"},
		authv1beta1.TenantConditionDrained))
}

// A unit test of a node pool's policy needs a manager to build the pool
// from, never started.
func ExampleUnreachableManager() {
	t := &testing.T{} // in a test, your *testing.T
	pool, err := budget.NewNodePool(envkit.UnreachableManager(t), "gpu", labels.SelectorFromSet(labels.Set{"pool": "gpu"}),
		budget.WithResources("nvidia.com/gpu"))
	fmt.Println(err, pool.Name())
	// Output: <nil> gpu
}
