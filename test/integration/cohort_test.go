package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// tierBudgets is issue 45's provider, in a cohort of its own: gold 10
// (lends all, takes back from anyone), spot 2 (may borrow 14), silver 4
// (lends 2, takes back from lower priorities).
func tierBudgets(t *testing.T, cohort string) (gold, spot, silver *budget.Budget) {
	t.Helper()
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	pool := cohort + "-pool"
	var err error
	gold, err = budget.New(cohort+"-gold", cpu("10"), budget.WithCohort(pool), budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimAny))
	require.NoError(t, err)
	spot, err = budget.New(cohort+"-spot", cpu("2"), budget.WithCohort(pool), budget.WithBorrowingLimit(cpu("14")))
	require.NoError(t, err)
	silver, err = budget.New(cohort+"-silver", cpu("4"), budget.WithCohort(pool), budget.WithLendingLimit(cpu("2")),
		budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimLowerPriority))
	require.NoError(t, err)
	return gold, spot, silver
}

// tiers starts a manager running Liqo's QuotaCreator and the classes
// prefix-spot (priority 0), prefix-silver (50) and prefix-gold (100), each
// on its own budget.
func tiers(t *testing.T, prefix string, gold, spot, silver *budget.Budget) *testkit.Manager {
	t.Helper()
	return testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		for _, c := range []struct {
			class string
			b     *budget.Budget
			prio  int32
		}{{prefix + "-spot", spot, 0}, {prefix + "-silver", silver, 50}, {prefix + "-gold", gold, 100}} {
			if err := resourceslice.AddToManager(mgr, c.class, accept("Granted", nil), resourceslice.WithBudget(c.b),
				resourceslice.WithoutTenantRule(), resourceslice.WithPriority(c.prio)); err != nil {
				return err
			}
		}
		return nil
	})
}

// offerIs reports whether the slice ns/name is Accepted with cpu, with
// reason (any when "").
func offerIs(t *testing.T, ns, name, cpu, reason string) bool {
	rs := get(t, ns, name)
	c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
	return c != nil && c.Status == authv1beta1.ResourceSliceConditionAccepted && (reason == "" || c.Reason == reason) &&
		rs.Status.Resources.Cpu().Cmp(resource.MustParse(cpu)) == 0
}

// Issue 45's proof on a real API server, with Liqo's QuotaCreator and
// ShadowPods as the virtual kubelet makes them: spot fills what gold and
// silver may lend (it holds 14, its pods using all of it); gold's slice
// asks 10 and spot is shrunk by exactly 10 after gold's first decision
// (how soon is logged); gold is admitted once spot's pods fit; silver takes back
// its 2 the same way; spot ends at its own 2 and never below; an
// independent watch sees the cohort's offers, Quotas and pods in use never
// sum above 16.
func TestCohortReclaimOnAServer(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	nsS := tenantNamespace(t, "cohort-spot", "cluster-cohort-spot")
	nsG := tenantNamespace(t, "cohort-gold", "cluster-cohort-gold")
	nsV := tenantNamespace(t, "cohort-silver", "cluster-cohort-silver")
	offloaded := testkit.Namespace(t, cp, "cohort-offloaded")
	gold, spot, silver := tierBudgets(t, "coh")
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "16", "coh-spot", "coh-gold", "coh-silver")
	tiers(t, "coh", gold, spot, silver)

	create(t, sliceIn(nsS, "s", "coh-spot", slicetest.WithConsumer("cluster-cohort-spot"), slicetest.WithRequest(corev1.ResourceCPU, "14")))
	testkit.Eventually(t, "spot Accepted with 14, borrowing 12, and its Quota at 14", func() bool {
		return offerIs(t, nsS, "s", "14", "") && quotaIs(nsS, "s", "14")()
	})
	assertCPUIs(t, "12", spot.Borrowed(), "spot borrows 12")
	assertCPUIs(t, "10", gold.Lent(), "gold lends its 10")
	assertCPUIs(t, "2", silver.Lent(), "silver lends its 2")
	user := quotaUser(t, nsS)
	pods := make([]*offloadingv1beta1.ShadowPod, 7)
	for i := range pods {
		pods[i] = runShadowPod(t, offloaded, fmt.Sprintf("spot-%d", i), user, "2")
	}
	testkit.Eventually(t, "spot's budget counts its pods", func() bool { u := spot.Used(); return u.Cpu().Value() == 14 })

	create(t, sliceIn(nsG, "g", "coh-gold", slicetest.WithConsumer("cluster-cohort-gold"), slicetest.WithRequest(corev1.ResourceCPU, "10")))
	var asked time.Time
	testkit.Every(10*time.Millisecond).Eventually(t, "gold decided: waiting", func() bool {
		c := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
		if c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied {
			asked = time.Now()
			return true
		}
		return false
	})
	testkit.Every(10*time.Millisecond).Eventually(t, "spot shrunk by exactly what gold lacks, to 4", func() bool {
		return offerIs(t, nsS, "s", "4", budget.ReasonReclaimed)
	})
	shrunk := time.Since(asked)
	t.Logf("spot shrunk %s after gold's first decision was seen", shrunk.Round(10*time.Millisecond)) // reported, not asserted
	testkit.Consistently(t, time.Second, "gold waits while spot's pods use more than it keeps", func() bool {
		return !conditions.IsAccepted(get(t, nsG, "g"))
	})
	for _, p := range pods[2:] { // spot's pods down to 4
		require.NoError(t, cp.Client.Delete(ctx, p))
	}
	testkit.Eventually(t, "gold admitted with 10 once spot's pods fit", func() bool {
		return offerIs(t, nsG, "g", "10", "")
	})

	create(t, sliceIn(nsV, "v", "coh-silver", slicetest.WithConsumer("cluster-cohort-silver"), slicetest.WithRequest(corev1.ResourceCPU, "4")))
	testkit.Eventually(t, "spot shrunk to its own 2 for silver", func() bool {
		return offerIs(t, nsS, "s", "2", budget.ReasonReclaimed)
	})
	require.NoError(t, cp.Client.Delete(ctx, pods[1]))
	testkit.Eventually(t, "silver admitted with its 4", func() bool { return offerIs(t, nsV, "v", "4", "") })
	testkit.Consistently(t, time.Second, "spot keeps its own 2", func() bool { return offerIs(t, nsS, "s", "2", "") })
	for _, b := range []*budget.Budget{gold, spot, silver} {
		assertCPUIs(t, "0", b.Borrowed(), b.Name()+" borrows nothing")
	}

	w.CaughtUp(t)
	assert.Equal(t, []string{"none", "14", "4", "2"}, w.OffersOf("s"), "spot is shrunk once for each lender, never below 2: %s", w.OfferLog("s"))
	w.Check(t)
}

// assertCPUIs checks the CPU of got.
func assertCPUIs(t *testing.T, want string, got corev1.ResourceList, msg string) {
	t.Helper()
	q := got[corev1.ResourceCPU]
	assert.Zero(t, q.Cmp(resource.MustParse(want)), "%s: want %s CPU, got %s", msg, want, q.String())
}

// A restart in the middle of a reclaim within the cohort: spot (borrowing,
// its pods using 14) is shrunk to 4 for gold (10); the manager stops while
// gold waits; a new leader starts as spot's pods end. Spot, whose offer is
// decided again by its own budget, must not grow back into what its pods
// free before gold, of another budget, is decided again: the new leader
// holds lower priorities across the cohort until the higher ones are
// decided. Gold is admitted, spot is shrunk once (none, 14, 4) and the
// cohort never holds more than 16.
func TestCohortRestartMidReclaim(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	nsS := tenantNamespace(t, "cohrr-spot", "cluster-cohrr-spot")
	nsG := tenantNamespace(t, "cohrr-gold", "cluster-cohrr-gold")
	offloaded := testkit.Namespace(t, cp, "cohrr-offloaded")
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "16", "cohrr-spot", "cohrr-gold", "cohrr-silver")
	gold, spot, silver := tierBudgets(t, "cohrr")
	m := tiers(t, "cohrr", gold, spot, silver)
	create(t, sliceIn(nsS, "s", "cohrr-spot", slicetest.WithConsumer("cluster-cohrr-spot"), slicetest.WithRequest(corev1.ResourceCPU, "14")))
	testkit.Eventually(t, "spot Accepted with 14 and its Quota at 14", func() bool {
		return offerIs(t, nsS, "s", "14", "") && quotaIs(nsS, "s", "14")()
	})
	user := quotaUser(t, nsS)
	pods := make([]*offloadingv1beta1.ShadowPod, 7)
	for i := range pods {
		pods[i] = runShadowPod(t, offloaded, fmt.Sprintf("spot-%d", i), user, "2")
	}
	testkit.Eventually(t, "spot's budget counts its pods", func() bool { u := spot.Used(); return u.Cpu().Value() == 14 })
	create(t, sliceIn(nsG, "g", "cohrr-gold", slicetest.WithConsumer("cluster-cohrr-gold"), slicetest.WithRequest(corev1.ResourceCPU, "10")))
	testkit.Eventually(t, "spot shrunk to 4 and gold waiting", func() bool {
		g := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
		return offerIs(t, nsS, "s", "4", budget.ReasonReclaimed) && g != nil && g.Status == authv1beta1.ResourceSliceConditionDenied
	})
	m.Stop()

	gold, spot, silver = tierBudgets(t, "cohrr")
	tiers(t, "cohrr", gold, spot, silver)
	for _, p := range pods[2:] { // as the new leader starts: spot's pods down to 4
		require.NoError(t, cp.Client.Delete(ctx, p))
	}
	testkit.Eventually(t, "gold admitted once spot's pods use 4", func() bool { return offerIs(t, nsG, "g", "10", "") })
	testkit.Consistently(t, time.Second, "spot keeps 4", func() bool { return offerIs(t, nsS, "s", "4", "") })
	w.CaughtUp(t)
	if offers := w.OffersOf("s"); !assert.ObjectsAreEqual([]string{"none", "14", "4"}, offers) {
		t.Errorf("spot's grant grew after the restart: %s (gold: %s); every event:\n%s", w.OfferLog("s"), w.OfferLog("g"), w.Timeline())
	}
	w.Check(t)
}
