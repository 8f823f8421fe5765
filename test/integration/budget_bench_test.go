package integration

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// BenchmarkBudgetDeletionToAdmission measures, on a real API server, the
// time from deleting an Accepted slice of a full budget to the Accepted
// status of the slice waiting for its capacity (issue 8), and reports p50
// and p99 over b.N deletions.
//
//	KUBEBUILDER_ASSETS=... go test -run '^$' -bench DeletionToAdmission -benchtime 20x ./test/integration/
func BenchmarkBudgetDeletionToAdmission(b *testing.B) {
	cp.Require(b)
	ctx := context.Background()
	ns := fmt.Sprintf("bench-budget-%d", time.Now().UnixNano()%1e6)
	require.NoError(b, cp.CreateNamespace(ctx, ns))
	bg, err := budget.New("bench", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	require.NoError(b, err)
	opts := testkit.ManagerOptions(b, cp.Scheme)
	opts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
	defer testkit.StartManagerWith(b, cp.Config, opts, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "budgetbench", accept("Granted", nil), resourceslice.WithBudget(bg),
			resourceslice.WithMaxConcurrentReconciles(4), resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()))
	}).Stop()

	status := func(name string) string {
		var rs authv1beta1.ResourceSlice
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return ""
		}
		if c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return ""
	}
	waitStatus := func(name, want string, poll time.Duration) {
		require.NoError(b, wait.PollUntilContextTimeout(ctx, poll, testwait.Timeout, true,
			func(context.Context) (bool, error) { return status(name) == want, nil }), "%s %s", name, want)
	}
	create := func(name string) {
		rs := slicetest.NewSlice(name, slicetest.WithNamespace(ns), slicetest.WithClass("budgetbench"), slicetest.WithRequest(corev1.ResourceCPU, "4"))
		require.NoError(b, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	}
	// The budget is full: holder-0 holds all 4 CPU.
	create("holder-0")
	waitStatus("holder-0", "Accepted/Granted", 20*time.Millisecond)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		holder, waiter := fmt.Sprintf("holder-%d", i), fmt.Sprintf("holder-%d", i+1)
		create(waiter)
		waitStatus(waiter, "Denied/"+budget.ReasonExhausted, 20*time.Millisecond)
		var rs authv1beta1.ResourceSlice
		require.NoError(b, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: holder}, &rs))
		b.StartTimer()
		start := time.Now()
		require.NoError(b, cp.Client.Delete(ctx, &rs))
		waitStatus(waiter, "Accepted/Granted", 5*time.Millisecond)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99+99)/100-1].Milliseconds()), "p99-ms")
}
