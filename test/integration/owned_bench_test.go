package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// BenchmarkOwnedObjects measures owned objects at scale (issues 19 and 29):
// 2000 accepted slices with two owned objects each (a ConfigMap in an
// accounting namespace, a cluster-scoped PriorityClass); then a pass that
// reconciles every slice again with nothing changed (a WithWatch trigger);
// then a restart with nothing changed; then a sweep after a restart during
// which half the slices were deleted. It reports the API requests per
// decision (status patches, server-side applies, lists), per reconcile of
// the pass, and of each restart, and the sweep's requests and time, as the
// API server counts them; and how many owned objects the unchanged
// restart's applies changed on the server (their resourceVersion).
//
//	KUBEBUILDER_ASSETS=... go test -run '^$' -bench OwnedObjects -benchtime 1x ./test/integration/
func BenchmarkOwnedObjects(b *testing.B) {
	cp.Require(b)
	if b.N > 1 {
		b.Skip("a one-shot measurement: run with -benchtime 1x")
	}
	const n, class = 2000, "ownbench"
	ctx := context.Background()
	ns, acct := "bench-owned", "bench-owned-accounting"
	require.NoError(b, cp.CreateNamespace(ctx, ns))
	require.NoError(b, cp.CreateNamespace(ctx, acct))
	for i := range n {
		rs := slicetest.NewSlice(fmt.Sprintf("s-%04d", i), slicetest.WithNamespace(ns), slicetest.WithClass(class),
			slicetest.WithRequest(corev1.ResourceCPU, "1"))
		require.NoError(b, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	}
	trigger := configMap(ns, "owned-trigger", map[string]string{"v": "1"})
	require.NoError(b, cp.Client.Create(ctx, trigger))
	var owns atomic.Int64 // calls of Owned: reconciles of Accepted slices
	p := &ownerPolicy{set: func(rs *authv1beta1.ResourceSlice) []client.Object {
		owns.Add(1)
		return []client.Object{configMap(acct, "record-"+rs.Name, map[string]string{"cpu": rs.Status.Resources.Cpu().String()}),
			priorityClass("ownbench-" + rs.Name)}
	}}
	start := func() (stop func()) {
		opts := testkit.ManagerOptions(b, cp.Scheme)
		mgr, err := manager.New(cp.Config, opts)
		require.NoError(b, err)
		require.NoError(b, resourceslice.AddToManager(mgr, class, p, resourceslice.WithMaxConcurrentReconciles(4),
			resourceslice.WithOwnedTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}),
			resourceslice.WithWatch(&corev1.ConfigMap{}, ownTrigger(ns)),
			resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()), resourceslice.WithDecisionEvents(resourceslice.DecisionEventsNone)))
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = mgr.Start(mctx) }()
		return func() { cancel(); <-done }
	}
	type counts struct{ status, apply, list, get, del int }
	read := func() counts {
		var c counts
		for _, r := range []string{"configmaps", "priorityclasses"} {
			a, err := apiserver.RequestCount(ctx, cp.Config, "APPLY", r, "")
			require.NoError(b, err)
			pa, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", r, "")
			require.NoError(b, err)
			l, err := apiserver.RequestCount(ctx, cp.Config, "LIST", r, "")
			require.NoError(b, err)
			g, err := apiserver.RequestCount(ctx, cp.Config, "GET", r, "")
			require.NoError(b, err)
			d, err := apiserver.RequestCount(ctx, cp.Config, "DELETE", r, "")
			require.NoError(b, err)
			c.apply += a + pa
			c.list += l
			c.get += g
			c.del += d
		}
		s, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
		require.NoError(b, err)
		c.status = s
		return c
	}
	polls := 0 // each owned() makes 2 LISTs of its own
	owned := func() (records, pcs int) {
		polls++
		var cms corev1.ConfigMapList
		require.NoError(b, cp.Client.List(ctx, &cms, client.InNamespace(acct), client.MatchingLabels{"sliceclass.io/class": class}))
		var pl schedulingv1.PriorityClassList
		require.NoError(b, cp.Client.List(ctx, &pl, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{"sliceclass.io/class": class})}))
		return len(cms.Items), len(pl.Items)
	}
	poll := func(what string, cond func() bool) {
		// Thousands of slices, each applying objects: bulk work.
		require.NoError(b, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*testwait.Timeout, true,
			func(context.Context) (bool, error) { return cond(), nil }), what)
	}
	// reconciled waits until every slice was reconciled since Owned had
	// been called from times, and the reconciles are over (none for 2 s);
	// it returns how many there were.
	reconciled := func(what string, from int64) int64 {
		last, since := owns.Load(), time.Now()
		poll(what, func() bool {
			if now := owns.Load(); now != last {
				last, since = now, time.Now()
			}
			return last-from >= n && time.Since(since) > 2*time.Second
		})
		return last - from
	}
	// versions are the owned objects' resourceVersions, by kind and name.
	versions := func() map[string]string {
		out := map[string]string{}
		var cms corev1.ConfigMapList
		require.NoError(b, cp.Client.List(ctx, &cms, client.InNamespace(acct), client.MatchingLabels{"sliceclass.io/class": class}))
		for _, cm := range cms.Items {
			out["ConfigMap "+cm.Name] = cm.ResourceVersion
		}
		var pl schedulingv1.PriorityClassList
		require.NoError(b, cp.Client.List(ctx, &pl, client.MatchingLabels{"sliceclass.io/class": class}))
		for _, pc := range pl.Items {
			out["PriorityClass "+pc.Name] = pc.ResourceVersion
		}
		return out
	}
	// requests sums what a stretch sent about slices and owned objects.
	requests := func(from, to counts) int {
		return (to.status - from.status) + (to.apply - from.apply) + (to.list - from.list) + (to.get - from.get) + (to.del - from.del)
	}

	b.ResetTimer()
	c0, t0, p0 := read(), time.Now(), polls
	stop := start()
	poll("every slice accepted and its objects applied", func() bool {
		var list authv1beta1.ResourceSliceList
		require.NoError(b, cp.Client.List(ctx, &list, client.InNamespace(ns)))
		for i := range list.Items {
			if !conditions.IsAccepted(&list.Items[i]) {
				return false
			}
		}
		r, pc := owned()
		return r == n && pc == n
	})
	decide := time.Since(t0)
	time.Sleep(2 * time.Second) // let the start-up reconciles end
	c1, p1 := read(), polls

	// A pass reconciles every Accepted slice again; nothing changed.
	from := owns.Load()
	bump(b, trigger)
	passReconciles := reconciled("every slice reconciled again by the pass", from)
	cPass := read()
	stop()

	// A restart with nothing changed: the Applier's memory is empty.
	before := versions()
	cR0, from := read(), owns.Load()
	stop = start()
	restartReconciles := reconciled("every slice reconciled after the restart", from)
	cR1 := read()
	stop()
	written := 0
	for k, rv := range versions() {
		if before[k] != rv {
			written++
		}
	}

	// Half the slices go while the manager is down; the restarted one
	// sweeps what they left.
	for i := 0; i < n; i += 2 {
		var rs authv1beta1.ResourceSlice
		require.NoError(b, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("s-%04d", i)}, &rs))
		require.NoError(b, cp.Client.Delete(ctx, &rs))
	}
	c2, t2, p2 := read(), time.Now(), polls
	stop = start()
	poll("the deleted slices' objects swept", func() bool { r, pc := owned(); return r == n/2 && pc == n/2 })
	sweep := time.Since(t2)
	time.Sleep(2 * time.Second)
	c3, p3 := read(), polls
	stop()
	b.StopTimer()

	per := func(x int) float64 { return float64(x) / n }
	b.ReportMetric(decide.Seconds(), "s-to-accept-and-apply")
	b.ReportMetric(per(c1.status-c0.status), "status-patches/slice")
	b.ReportMetric(per(c1.apply-c0.apply), "applies/slice")
	b.ReportMetric(per(c1.list-c0.list-2*(p1-p0)), "owned-lists/slice")
	b.ReportMetric(per(c1.get-c0.get), "owned-gets/slice")
	perReconcile := func(x int, reconciles int64) float64 { return float64(x) / float64(reconciles) }
	b.ReportMetric(float64(passReconciles), "pass-reconciles")
	// The bump's own read of the trigger is not the controller's.
	b.ReportMetric(perReconcile(requests(c1, cPass)-1, passReconciles), "pass-requests/reconcile")
	b.ReportMetric(perReconcile(cPass.apply-c1.apply, passReconciles), "pass-applies/reconcile")
	b.ReportMetric(float64(restartReconciles), "unchanged-restart-reconciles")
	b.ReportMetric(float64(cR1.apply-cR0.apply), "unchanged-restart-applies")
	b.ReportMetric(perReconcile(requests(cR0, cR1), restartReconciles), "unchanged-restart-requests/reconcile")
	b.ReportMetric(float64(written), "unchanged-restart-objects-written")
	b.ReportMetric(sweep.Seconds(), "s-restart-to-swept")
	b.ReportMetric(float64(c3.del-c2.del), "sweep-deletes")
	b.ReportMetric(float64(c3.list-c2.list-2*(p3-p2)), "restart-lists")
	b.ReportMetric(float64(c3.apply-c2.apply), "restart-applies")
}
