package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// What the consumer's pods use counts (issue 27), with Liqo's own
// QuotaCreator beside the class and ShadowPods made as the consumer's
// virtual kubelet makes them (labelled liqo.io/creator-user with the
// Quota's user): x is Accepted with 8 of a 10-CPU budget and its two pods
// of 4 run; the policy lowers x's grant to 2 and Liqo shrinks its Quota;
// y's 6 CPU then waits, across a restart, until one of x's pods ends.
// Before, y was admitted at once: 14 CPU in use on a budget of 10.
func TestShrunkGrantFreesCapacityAsPodsEnd(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	nsX := tenantNamespace(t, "inuse-x", "cluster-x")
	nsY := tenantNamespace(t, "inuse-y", "cluster-y")
	offloaded := testkit.Namespace(t, cp, "inuse-offloaded")
	class := "inuse"
	var xOffer atomic.Value
	xOffer.Store("8")
	policy := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		if rs.Name == "x" {
			rs.Status.Resources[corev1.ResourceCPU] = resource.MustParse(xOffer.Load().(string))
		}
		conditions.Accept(rs, "Granted", "granted")
		return ctrl.Result{}, nil
	})
	start := func() (*testkit.Manager, *budget.Budget) {
		b, err := budget.New("inuse", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
		require.NoError(t, err)
		m := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
			if err := withLiqoQuotas(mgr); err != nil {
				return err
			}
			return resourceslice.AddToManager(mgr, class, policy, resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
		})
		return m, b
	}
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "10", class)
	m, b := start()
	create(t, sliceIn(nsX, "x", class, slicetest.WithConsumer("cluster-x"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "x Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, nsX, "x")) && quotaIs(nsX, "x", "8")()
	})
	user := quotaUser(t, nsX)
	p1 := runShadowPod(t, offloaded, "p1", user, "4")
	runShadowPod(t, offloaded, "p2", user, "4")
	testkit.Eventually(t, "the budget counts x's pods", func() bool {
		used := b.Used()
		return used.Cpu().Value() == 8
	})

	// The policy lowers x's grant; Liqo shrinks the Quota; the pods run on.
	xOffer.Store("2")
	setCPURequest(t, nsX, "x", "7") // a change the controller decides again
	testkit.Eventually(t, "x Accepted with 2 and its Quota at 2", func() bool {
		rs := get(t, nsX, "x")
		cpu := rs.Status.Resources[corev1.ResourceCPU]
		return conditions.IsAccepted(rs) && cpu.Cmp(resource.MustParse("2")) == 0 && quotaIs(nsX, "x", "2")()
	})
	used := b.Used()
	assert.Equal(t, int64(8), used.Cpu().Value(), "x's running pods still use 8")

	// Across a restart, the budget rebuilds the same: y waits.
	m.Stop()
	_, b = start()
	create(t, sliceIn(nsY, "y", class, slicetest.WithConsumer("cluster-y"), slicetest.WithRequest(corev1.ResourceCPU, "6")))
	c := conditions.Get(waitForDecision(t, nsY, "y"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, c.Status, "y must wait while x's pods use 8: %s", c.Message)
	assert.Equal(t, budget.ReasonExhausted, c.Reason)
	assert.Equal(t, "budget inuse: cpu: asked 6, waits until 6 is free", c.Message)
	testkit.Consistently(t, time.Second, "y keeps waiting", func() bool { return !conditions.IsAccepted(get(t, nsY, "y")) })

	// One of x's pods ends: 4 in use, and y's 6 fits.
	require.NoError(t, cp.Client.Delete(ctx, p1))
	testkit.Eventually(t, "y admitted once x's pods use 4", func() bool { return conditions.IsAccepted(get(t, nsY, "y")) })
	used = b.Used()
	assert.Equal(t, int64(10), used.Cpu().Value(), "x's 4 in use and y's 6")
	w.Check(t)
}

// quotaUser is the user of the one Quota in ns.
func quotaUser(t *testing.T, ns string) string {
	t.Helper()
	var list offloadingv1beta1.QuotaList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(ns)))
	require.Len(t, list.Items, 1)
	return list.Items[0].Spec.User
}

// runShadowPod creates a ShadowPod as the consumer's virtual kubelet does
// (labelled with the creator user) asking cpu, and marks it Running.
func runShadowPod(t *testing.T, ns, name, user, cpu string) *offloadingv1beta1.ShadowPod {
	t.Helper()
	ctx := context.Background()
	sp := &offloadingv1beta1.ShadowPod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"liqo.io/creator-user": user}},
		Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}}},
	}
	require.NoError(t, cp.Client.Create(ctx, sp))
	sp.Status.Phase = corev1.PodRunning
	require.NoError(t, cp.Client.Status().Update(ctx, sp), fmt.Sprintf("ShadowPod %s/%s Running", ns, name))
	return sp
}

// runShadowPodsByAge runs a ShadowPod per cpu (pod-0, pod-1, ...), each
// created in a later second than the one before (creation times have a
// one-second grain): the first is the oldest, the last the newest.
func runShadowPodsByAge(t *testing.T, ns, user string, cpus ...string) []*offloadingv1beta1.ShadowPod {
	t.Helper()
	pods := make([]*offloadingv1beta1.ShadowPod, len(cpus))
	for i, cpu := range cpus {
		if i > 0 {
			waitNextSecond()
		}
		pods[i] = runShadowPod(t, ns, fmt.Sprintf("pod-%d", i), user, cpu)
	}
	return pods
}

// Reclaim by priority (issue 27), with Liqo's QuotaCreator and ShadowPods
// as the virtual kubelet makes them: spot (priority 0) holds 8 of a
// 10-CPU budget built WithPreemption and its pods use 8; gold (100) asks 6.
// spot is shrunk to 4 (reason Reclaimed, a Warning event) at once, Liqo's
// Quota follows, gold waits for the reclaimed capacity still in use and is
// admitted once spot's pods use 4. A second spot slice asking meanwhile
// does not take what was reclaimed for gold.
func TestReclaimForHigherPriority(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	nsS := tenantNamespace(t, "reclaim-spot", "cluster-spot")
	nsG := tenantNamespace(t, "reclaim-gold", "cluster-gold")
	offloaded := testkit.Namespace(t, cp, "reclaim-offloaded")
	b, err := budget.New("reclaim", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithPreemption())
	require.NoError(t, err)
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "10", "spot", "gold")
	spotAndGold(t, b, "spot", "gold")
	create(t, sliceIn(nsS, "s", "spot", slicetest.WithConsumer("cluster-spot"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "spot's slice Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, nsS, "s")) && quotaIs(nsS, "s", "8")()
	})
	user := quotaUser(t, nsS)
	p1 := runShadowPod(t, offloaded, "p1", user, "4")
	runShadowPod(t, offloaded, "p2", user, "4")
	testkit.Eventually(t, "the budget counts spot's pods", func() bool { u := b.Used(); return u.Cpu().Value() == 8 })

	arrived := time.Now()
	create(t, sliceIn(nsG, "g", "gold", slicetest.WithConsumer("cluster-gold"), slicetest.WithRequest(corev1.ResourceCPU, "6")))
	var shrunk time.Duration
	testkit.Every(10*time.Millisecond).Eventually(t, "spot shrunk to 4, reason Reclaimed", func() bool {
		rs := get(t, nsS, "s")
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		cpu := rs.Status.Resources[corev1.ResourceCPU]
		shrunk = time.Since(arrived)
		return c != nil && c.Status == authv1beta1.ResourceSliceConditionAccepted && c.Reason == budget.ReasonReclaimed && cpu.Cmp(resource.MustParse("4")) == 0
	})
	t.Logf("spot shrunk %s after gold's arrival", shrunk.Round(time.Millisecond)) // reported, not asserted
	c := conditions.Get(get(t, nsS, "s"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, "budget reclaim reclaimed cpu 8 to 4 for priority 100", c.Message)
	testkit.Eventually(t, "a Reclaimed Warning event", hasEvent(t, nsS, "s", budget.ReasonReclaimed))
	testkit.Eventually(t, "Liqo shrinks spot's Quota to 4", quotaIs(nsS, "s", "4"))
	g := conditions.Get(waitForDecision(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, g.Status, "gold waits while spot's pods use 8")
	testkit.Eventually(t, "gold's condition says what it waits for", func() bool {
		g := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
		return g.Message == "budget reclaim: cpu: asked 6, waits until 6 is free; waiting for reclaimed capacity still in use: cpu"
	})

	// Another spot slice asking 2 does not take the reclaimed capacity.
	create(t, sliceIn(nsS, "s2", "spot", slicetest.WithConsumer("cluster-spot"), slicetest.WithRequest(corev1.ResourceCPU, "2")))
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, conditions.Get(waitForDecision(t, nsS, "s2"), authv1beta1.ResourceSliceConditionTypeResources).Status)

	require.NoError(t, cp.Client.Delete(ctx, p1))
	testkit.Eventually(t, "gold admitted once spot's pods use 4", func() bool { return conditions.IsAccepted(get(t, nsG, "g")) })
	used := b.Used()
	assert.Equal(t, int64(10), used.Cpu().Value())
	assert.False(t, conditions.IsAccepted(get(t, nsS, "s2")), "spot's second slice still waits")
	w.Check(t)
}

// Equal priorities never preempt, without WithPreemption nothing is
// preempted, and a waiter that would not fit even with all that lower
// priorities hold preempts nobody: gold's slice waits, spot's keeps its 8.
func TestNoReclaimWithoutPreemptionOrAtEqualPriority(t *testing.T) {
	cp.Require(t)
	for _, tc := range []struct {
		name       string
		preemption bool
		goldPrio   int32
		goldAsks   string
	}{{"equal", true, 0, "6"}, {"off", false, 100, "6"}, {"toobig", true, 100, "11"}} {
		t.Run(tc.name, func(t *testing.T) {
			nsS := tenantNamespace(t, "noreclaim-s-"+tc.name, "cluster-ns-"+tc.name)
			nsG := tenantNamespace(t, "noreclaim-g-"+tc.name, "cluster-ng-"+tc.name)
			var opts []budget.Option
			if tc.preemption {
				opts = append(opts, budget.WithPreemption())
			}
			b, err := budget.New("noreclaim-"+tc.name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, opts...)
			require.NoError(t, err)
			spot, gold := "nr-spot-"+tc.name, "nr-gold-"+tc.name
			testkit.StartManager(t, cp, func(mgr manager.Manager) error {
				if err := resourceslice.AddToManager(mgr, spot, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule()); err != nil {
					return err
				}
				return resourceslice.AddToManager(mgr, gold, accept("Granted", nil), resourceslice.WithBudget(b),
					resourceslice.WithoutTenantRule(), resourceslice.WithPriority(tc.goldPrio))
			})
			create(t, sliceIn(nsS, "s", spot, slicetest.WithConsumer("cluster-ns-"+tc.name), slicetest.WithRequest(corev1.ResourceCPU, "8")))
			testkit.Eventually(t, "spot Accepted", func() bool { return conditions.IsAccepted(get(t, nsS, "s")) })
			create(t, sliceIn(nsG, "g", gold, slicetest.WithConsumer("cluster-ng-"+tc.name), slicetest.WithRequest(corev1.ResourceCPU, tc.goldAsks)))
			assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, conditions.Get(waitForDecision(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources).Status)
			testkit.Consistently(t, time.Second, "spot keeps its 8", func() bool {
				rs := get(t, nsS, "s")
				cpu := rs.Status.Resources[corev1.ResourceCPU]
				return cpu.Cmp(resource.MustParse("8")) == 0 && conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).Reason == "Granted"
			})
		})
	}
}

// "Take it back from globex": SetConsumerLimit(globex, cpu 0) shrinks
// globex's Accepted slice to nothing (reason Reclaimed), Liqo's Quota
// follows, and the capacity frees as its pods end.
func TestSetConsumerLimitTakesItBack(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns := tenantNamespace(t, "takeback-globex", "globex")
	offloaded := testkit.Namespace(t, cp, "takeback-offloaded")
	b, err := budget.New("takeback", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
	require.NoError(t, err)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "takeback", accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	create(t, sliceIn(ns, "idle", "takeback", slicetest.WithConsumer("globex"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "globex's slice Accepted with 8", func() bool {
		return conditions.IsAccepted(get(t, ns, "idle")) && quotaIs(ns, "idle", "8")()
	})
	pod := runShadowPod(t, offloaded, "last", quotaUser(t, ns), "2")

	require.NoError(t, b.SetConsumerLimit("globex", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}))
	testkit.Eventually(t, "globex's slice Accepted with 0, reason Reclaimed", func() bool {
		rs := get(t, ns, "idle")
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		cpu := rs.Status.Resources[corev1.ResourceCPU]
		return c.Status == authv1beta1.ResourceSliceConditionAccepted && c.Reason == budget.ReasonReclaimed && cpu.IsZero() &&
			c.Message == `budget takeback reclaimed cpu 8 to 0 for consumer "globex"'s limit`
	})
	testkit.Eventually(t, "Liqo shrinks the Quota to 0", quotaIs(ns, "idle", "0"))
	testkit.Eventually(t, "its running pod still counts", func() bool { u := b.Used(); return u.Cpu().Value() == 2 })
	// Its pod outliving the smaller grant is what a reclaim leaves, not
	// Liqo's enforcement off: no OverGrant (issue 35; this test asserted
	// one before).
	testkit.Consistently(t, 2*time.Second, "no OverGrant for a pod that outlives a reclaimed grant", func() bool {
		return !hasEvent(t, ns, "idle", "OverGrant")()
	})
	require.NoError(t, cp.Client.Delete(ctx, pod))
	testkit.Eventually(t, "all freed once its pods end", func() bool { u := b.Used(); return u.Cpu().IsZero() })
}

// Eviction after a consumer limit is lowered (budget.WithEvictionAfter):
// globex's slice holds 8 with pods using 2 (oldest), 2 and 4 (newest);
// SetConsumerLimit(globex, cpu 2) shrinks it to 2, and d later the newest
// pods are deleted until the rest fit what it keeps: the 4 and the middle
// 2, not the oldest. The budget then counts 2.
func TestEvictionAfterAConsumerLimitIsLowered(t *testing.T) {
	cp.Require(t)
	ns := tenantNamespace(t, "limitevict-globex", "globex-evict")
	offloaded := testkit.Namespace(t, cp, "limitevict-offloaded")
	const d = 2 * time.Second
	b, err := budget.New("limitevict", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithEvictionAfter(d))
	require.NoError(t, err)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "limitevict", accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	create(t, sliceIn(ns, "s", "limitevict", slicetest.WithConsumer("globex-evict"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "globex's slice Accepted with 8", func() bool {
		return conditions.IsAccepted(get(t, ns, "s")) && quotaIs(ns, "s", "8")()
	})
	user := quotaUser(t, ns)
	pods := runShadowPodsByAge(t, offloaded, user, "2", "2", "4")
	oldest, mid, newest := pods[0], pods[1], pods[2]
	testkit.Eventually(t, "the budget counts globex's pods", func() bool { u := b.Used(); return u.Cpu().Value() == 8 })

	require.NoError(t, b.SetConsumerLimit("globex-evict", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}))
	testkit.Eventually(t, "globex's slice shrunk to 2, reason Reclaimed", func() bool {
		rs := get(t, ns, "s")
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return c.Status == authv1beta1.ResourceSliceConditionAccepted && c.Reason == budget.ReasonReclaimed && rs.Status.Resources.Cpu().Cmp(resource.MustParse("2")) == 0
	})
	testkit.Consistently(t, d-time.Second, "no pod is deleted before d", func() bool {
		return exists(t, oldest) && exists(t, mid) && exists(t, newest)
	})
	testkit.Eventually(t, "the two newest pods are evicted", func() bool { return !exists(t, newest) && !exists(t, mid) })
	testkit.Consistently(t, time.Second, "the oldest fits what globex keeps: it runs on", func() bool { return exists(t, oldest) })
	testkit.Eventually(t, "the budget counts what is left", func() bool { u := b.Used(); return u.Cpu().Value() == 2 })
}
