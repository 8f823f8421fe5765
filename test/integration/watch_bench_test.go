package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// BenchmarkWatchPassNothingChanges measures a WithWatch pass over 2000
// decided slices whose decision does not change (issue 9): a ConfigMap
// update re-evaluates every slice of the class, and the pass must cost zero
// status writes. s/pass runs from the ConfigMap update to the last slice
// re-evaluated, the 1s coalescing window included.
//
//	KUBEBUILDER_ASSETS=... go test -run '^$' -bench WatchPass -benchtime 3x ./test/integration/
func BenchmarkWatchPassNothingChanges(b *testing.B) {
	cp.Require(b)
	// The testing package runs a benchmark function more than once (b.N = 1
	// first): the fixture, a manager over 2000 decided slices, is built once.
	fx := &watchBench
	fx.once.Do(func() { fx.cm = setupWatchBench(b, &fx.calls) })
	require.NotNil(b, fx.cm, "fixture failed")
	ctx, n := context.Background(), int64(watchBenchSlices)
	waitCalls := func(want int64) {
		// A pass over thousands of slices: bulk work.
		require.NoError(b, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 3*testwait.Timeout, true,
			func(context.Context) (bool, error) { return fx.calls.Load() >= want, nil }))
	}
	patches0, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(b, err)
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := fx.calls.Load()
		start := time.Now()
		fx.round++
		fx.cm.Data["round"] = fmt.Sprint(fx.round)
		require.NoError(b, cp.Client.Update(ctx, fx.cm))
		waitCalls(before + n)
		elapsed += time.Since(start)
	}
	b.StopTimer()
	patches, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(b, err)
	b.ReportMetric(float64(patches-patches0)/float64(b.N), "writes/pass")
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/pass")
	b.ReportMetric(float64(n), "slices/pass")
	require.Zero(b, patches-patches0, "a pass where nothing changes must write nothing")
}

const watchBenchSlices = 2000

// watchBenchFixture is the benchmark's fixture, built once per test binary;
// its manager runs until the process ends.
type watchBenchFixture struct {
	once  sync.Once
	cm    *corev1.ConfigMap
	calls atomic.Int64
	round int
}

var watchBench watchBenchFixture

// setupWatchBench creates the slices and the watched ConfigMap, starts a
// manager serving them with WithWatch, and waits until every slice is
// decided and the controller is idle.
func setupWatchBench(b *testing.B, calls *atomic.Int64) *corev1.ConfigMap {
	const n = watchBenchSlices
	ctx := context.Background()
	ns := "bench-watch-pass"
	require.NoError(b, cp.CreateNamespace(ctx, ns))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "caps"}, Data: map[string]string{"round": "0"}}
	require.NoError(b, cp.Client.Create(ctx, cm))
	for i := range n {
		rs := slicetest.NewSlice(fmt.Sprintf("s-%04d", i), slicetest.WithNamespace(ns), slicetest.WithClass("watchbench"),
			slicetest.WithRequest(corev1.ResourceCPU, "1"))
		require.NoError(b, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	}
	grant := func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		calls.Add(1)
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	}
	opts := testkit.ManagerOptions(b, cp.Scheme)
	opts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
	mgr, err := manager.New(cp.Config, opts)
	require.NoError(b, err)
	require.NoError(b, resourceslice.AddToManager(mgr, "watchbench", handlerFunc(grant),
		resourceslice.WithWatch(&corev1.ConfigMap{}), resourceslice.WithMaxConcurrentReconciles(4),
		resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()), resourceslice.WithDecisionEvents(resourceslice.DecisionEventsNone)))
	go func() { _ = mgr.Start(ctx) }()
	// Thousands of slices decided: bulk work.
	require.NoError(b, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*testwait.Timeout, true, func(context.Context) (bool, error) {
		var list authv1beta1.ResourceSliceList
		if err := cp.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for i := range list.Items {
			if !conditions.IsAccepted(&list.Items[i]) {
				return false, nil
			}
		}
		return len(list.Items) == n, nil
	}), "every slice decided")
	// Idle: no handler call for half a second (the start-up pass included).
	last := calls.Load()
	require.NoError(b, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, testwait.Timeout, false, func(context.Context) (bool, error) {
		now := calls.Load()
		quiet := now == last
		last = now
		return quiet, nil
	}), "the controller goes idle")
	return cm
}

// handlerFunc adapts a function to handler.Handler.
type handlerFunc func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error)

func (f handlerFunc) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	return f(ctx, rs)
}
