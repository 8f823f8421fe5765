package integration

import (
	"context"
	"slices"
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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// spotAndGold starts a manager running Liqo's QuotaCreator and classes
// spotClass (priority 0) and goldClass (priority 100) on b.
func spotAndGold(t *testing.T, b *budget.Budget, spotClass, goldClass string) *testkit.Manager {
	t.Helper()
	return testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		if err := resourceslice.AddToManager(mgr, spotClass, accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(0)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, goldClass, accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(100))
	})
}

// Eviction after d (budget.WithEvictionAfter): spot holds 8 of 10 with
// pods of 4 (the oldest), 2 and 2 (the newest); gold (100) asks 6 and spot
// is shrunk to 4. Nothing is deleted before d; then the two newest pods
// go, each with an Evicted Warning on spot's slice, the oldest runs on,
// and gold is admitted. Offers, Quotas and pods in use never sum past 10.
func TestEvictionAfterDeletesOnlyWhatIsNeeded(t *testing.T) {
	cp.Require(t)
	nsS := tenantNamespace(t, "evict-spot", "cluster-evict-spot")
	nsG := tenantNamespace(t, "evict-gold", "cluster-evict-gold")
	offloaded := testkit.Namespace(t, cp, "evict-offloaded")
	const d = 3 * time.Second
	b, err := budget.New("evict", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")},
		budget.WithPreemption(), budget.WithEvictionAfter(d))
	require.NoError(t, err)
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "10", "ev-spot", "ev-gold")
	spotAndGold(t, b, "ev-spot", "ev-gold")
	create(t, sliceIn(nsS, "s", "ev-spot", slicetest.WithConsumer("cluster-evict-spot"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "spot Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, nsS, "s")) && quotaIs(nsS, "s", "8")()
	})
	user := quotaUser(t, nsS)
	pods := runShadowPodsByAge(t, offloaded, user, "4", "2", "2")
	oldest, mid, newest := pods[0], pods[1], pods[2]
	testkit.Eventually(t, "the budget counts spot's pods", func() bool { u := b.Used(); return u.Cpu().Value() == 8 })

	create(t, sliceIn(nsG, "g", "ev-gold", slicetest.WithConsumer("cluster-evict-gold"), slicetest.WithRequest(corev1.ResourceCPU, "6")))
	testkit.Every(20*time.Millisecond).Eventually(t, "spot shrunk to 4", func() bool {
		rs := get(t, nsS, "s")
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Reason == budget.ReasonReclaimed && rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0
	})
	shrunk := time.Now()
	testkit.Consistently(t, d-time.Second, "no pod is deleted before d", func() bool {
		return exists(t, oldest) && exists(t, mid) && exists(t, newest)
	})
	testkit.Eventually(t, "the two newest pods are evicted", func() bool { return !exists(t, newest) && !exists(t, mid) })
	t.Logf("evicted %s after the shrink (d = %s)", time.Since(shrunk).Round(100*time.Millisecond), d)
	assert.True(t, exists(t, oldest), "the oldest pod fits what spot keeps: it runs on")
	testkit.Eventually(t, "an Evicted Warning per pod on spot's slice", func() bool {
		n := 0
		for _, e := range eventsFor(t, nsS, "s") {
			if e.Reason == "Evicted" && e.Type == corev1.EventTypeWarning {
				n++
			}
		}
		return n == 2
	})
	testkit.Eventually(t, "gold admitted", func() bool { return conditions.IsAccepted(get(t, nsG, "g")) })
	testkit.Consistently(t, time.Second, "nothing more is evicted", func() bool { return exists(t, oldest) })
	w.Check(t)
}

// A restart in the middle of a reclaim finishes it without shrinking
// anyone twice: spot (8, pods using 8) is shrunk to 4 for gold (6); the
// manager stops while gold waits; a new leader deciding spot first keeps
// it at 4 (its old offer is not given back, though its Quota still says
// 8: Liqo had not yet lowered it); then one serving both keeps
// spot at 4 (no second shrink), gold still waits for the reclaimed
// capacity in use, and is admitted once spot's pods use 4. Offers, Quotas and pods in use never
// sum past 10.
func TestRestartMidReclaimShrinksNobodyTwice(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	nsS := tenantNamespace(t, "midreclaim-spot", "cluster-mid-spot")
	nsG := tenantNamespace(t, "midreclaim-gold", "cluster-mid-gold")
	offloaded := testkit.Namespace(t, cp, "midreclaim-offloaded")
	newBudget := func() *budget.Budget {
		b, err := budget.New("midreclaim", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithPreemption())
		require.NoError(t, err)
		return b
	}
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "10", "mid-spot", "mid-gold")
	b := newBudget()
	m := spotAndGold(t, b, "mid-spot", "mid-gold")
	create(t, sliceIn(nsS, "s", "mid-spot", slicetest.WithConsumer("cluster-mid-spot"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "spot Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, nsS, "s")) && quotaIs(nsS, "s", "8")()
	})
	user := quotaUser(t, nsS)
	p1 := runShadowPod(t, offloaded, "p1", user, "4")
	runShadowPod(t, offloaded, "p2", user, "4")
	testkit.Eventually(t, "the budget counts spot's pods", func() bool { u := b.Used(); return u.Cpu().Value() == 8 })
	create(t, sliceIn(nsG, "g", "mid-gold", slicetest.WithConsumer("cluster-mid-gold"), slicetest.WithRequest(corev1.ResourceCPU, "6")))
	testkit.Eventually(t, "spot shrunk to 4 and gold waiting", func() bool {
		rs := get(t, nsS, "s")
		g := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
		return rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0 && g != nil && g.Status == authv1beta1.ResourceSliceConditionDenied
	})
	m.Stop()

	// A new leader that decides spot before gold (here: serving spot
	// alone) must not give spot its old 8 back: its pods' 8 are being
	// taken back, not room for it to grow into; nor is its Quota, which
	// Liqo lowers only after it sees the smaller offer. The manager that
	// stopped may have stopped Liqo's QuotaCreator before it did: this
	// leader starts with spot's Quota still at 8, and no QuotaCreator.
	setQuotaCPU(t, nsS, "s", "8")
	b = newBudget()
	alone := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "mid-spot", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(0))
	})
	var used atomic.Value
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the new leader's budget last counted %v CPU", used.Load())
		}
	})
	testkit.Eventually(t, "the new leader counts spot's pods", func() bool {
		u := b.Used()
		used.Store(u.Cpu().String())
		return u.Cpu().Value() == 8
	})
	testkit.Consistently(t, 2*time.Second, "spot, decided alone, keeps 4", func() bool {
		rs := get(t, nsS, "s")
		return rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0
	})
	alone.Stop()

	b = newBudget()
	spotAndGold(t, b, "mid-spot", "mid-gold")
	testkit.Eventually(t, "after the restart gold waits for the reclaimed capacity in use", func() bool {
		g := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
		return g.Status == authv1beta1.ResourceSliceConditionDenied &&
			g.Message == "budget midreclaim: cpu: asked 6, waits until 6 is free; waiting for reclaimed capacity still in use: cpu"
	})
	// That status is the old leader's, unchanged: the new one writes
	// nothing new. The test waits until the new leader has decided gold,
	// which then waits in its budget, before a pod of spot's ends. (A pod
	// that ends before a higher priority's first decision after a restart
	// is TestRestartAsAVictimsPodEnds's case: the new leader holds spot's
	// growth until gold is decided.)
	testkit.Eventually(t, "gold waits in the new leader's budget", func() bool {
		return slices.Contains(ledger.Of(b).Waiting(), ledger.Holder{Class: "mid-gold", Key: types.NamespacedName{Namespace: nsG, Name: "g"}})
	})
	testkit.Consistently(t, 2*time.Second, "spot keeps 4, reason Reclaimed", func() bool {
		rs := get(t, nsS, "s")
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return c.Reason == budget.ReasonReclaimed && rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0
	})
	require.NoError(t, cp.Client.Delete(ctx, p1))
	testkit.Eventually(t, "gold admitted once spot's pods use 4", func() bool { return conditions.IsAccepted(get(t, nsG, "g")) })
	// Spot is shrunk once. One full-suite run in three once saw it given
	// its 8 back and shrunk again (none, 8, 4, 8, 4): gold's admission for
	// reclaimed capacity was refused for a newer version, which lifted
	// spot's cap until gold decided again. The ledger now keeps the cap
	// until gold's write is applied (its tests pin that path); a second
	// shrink here fails with every event the watcher saw.
	w.CaughtUp(t)
	if offers := w.OffersOf("s"); !assert.ObjectsAreEqual([]string{"none", "8", "4"}, offers) {
		t.Errorf("spot was shrunk more than once: %s (gold: %s); every event:\n%s", w.OfferLog("s"), w.OfferLog("g"), w.Timeline())
	}
	offers := w.OffersOf("s")
	assert.Equal(t, "4", offers[len(offers)-1], "spot ends at what it keeps")
	w.Check(t)
}

// setQuotaCPU sets the CPU of the Quota Liqo made for the slice, as when
// Liqo's QuotaCreator has not yet followed a change of its offer.
func setQuotaCPU(t *testing.T, ns, name, cpu string) {
	t.Helper()
	rs := get(t, ns, name)
	var list offloadingv1beta1.QuotaList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(ns)))
	for i := range list.Items {
		q := &list.Items[i]
		if o := metav1.GetControllerOf(q); o != nil && o.UID == rs.UID {
			q.Spec.Resources[corev1.ResourceCPU] = resource.MustParse(cpu)
			require.NoError(t, cp.Client.Update(context.Background(), q))
			return
		}
	}
	t.Fatalf("no Quota for slice %s/%s", ns, name)
}

// A node pool that shrinks, with preemption and eviction after d: two
// nodes of 5 CPU; spot (priority 0) holds 6 with pods of 1 (the oldest) and
// 4 (the newest), gold (100) holds 4. A node is cordoned: the pool is 5,
// and spot, the lowest priority, is shrunk to 1 (gold keeps its 4). d
// later spot's newest pod is evicted; the oldest fits what spot keeps and
// runs on, and the budget counts 5 of 5.
func TestAShrinkingPoolReclaimsTheLowestPriority(t *testing.T) {
	cp.Require(t)
	id := "np-shrink"
	nsS := tenantNamespace(t, "npshrink-spot", "cluster-npshrink-spot")
	nsG := tenantNamespace(t, "npshrink-gold", "cluster-npshrink-gold")
	offloaded := testkit.Namespace(t, cp, "npshrink-offloaded")
	const d = 2 * time.Second
	n1, n2 := id+"-1", id+"-2"
	addNode(t, n1, poolNodeLabels(id, "cpu"), "5", "0")
	addNode(t, n2, poolNodeLabels(id, "cpu"), "5", "0")
	var b *budget.Budget
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		if b, err = budget.NewNodePool(mgr, id, labels.SelectorFromSet(poolNodeLabels(id, "cpu")),
			budget.WithResources(corev1.ResourceCPU), budget.WithPreemption(), budget.WithEvictionAfter(d)); err != nil {
			return err
		}
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		if err := resourceslice.AddToManager(mgr, "npshrink-spot", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(0)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "npshrink-gold", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(100))
	})
	testkit.Eventually(t, "the pool is 10 CPU", func() bool { return totalIs(b, units{corev1.ResourceCPU: 10}) })
	create(t, sliceIn(nsS, "s", "npshrink-spot", slicetest.WithConsumer("cluster-npshrink-spot"), slicetest.WithRequest(corev1.ResourceCPU, "6")))
	create(t, sliceIn(nsG, "g", "npshrink-gold", slicetest.WithConsumer("cluster-npshrink-gold"), slicetest.WithRequest(corev1.ResourceCPU, "4")))
	testkit.Eventually(t, "spot Accepted with 6, gold with 4", func() bool {
		return conditions.IsAccepted(get(t, nsS, "s")) && quotaIs(nsS, "s", "6")() &&
			conditions.IsAccepted(get(t, nsG, "g")) && quotaIs(nsG, "g", "4")()
	})
	user := quotaUser(t, nsS)
	pods := runShadowPodsByAge(t, offloaded, user, "1", "4")
	oldest, newest := pods[0], pods[1]

	changeNode(t, n2, false, func(n *corev1.Node) { n.Spec.Unschedulable = true })
	testkit.Eventually(t, "spot shrunk to 1, reason Reclaimed", func() bool {
		rs := get(t, nsS, "s")
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Reason == budget.ReasonReclaimed && rs.Status.Resources.Cpu().Cmp(resource.MustParse("1")) == 0
	})
	g := get(t, nsG, "g")
	assert.True(t, conditions.IsAccepted(g) && g.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0, "gold, the higher priority, keeps its 4")
	testkit.Eventually(t, "the newest pod is evicted", func() bool { return !exists(t, newest) })
	testkit.Consistently(t, time.Second, "the oldest fits what spot keeps: it runs on", func() bool { return exists(t, oldest) })
	testkit.Eventually(t, "the pool counts 5 of 5", func() bool { u := b.Used(); return u.Cpu().Value() == 5 })
}
