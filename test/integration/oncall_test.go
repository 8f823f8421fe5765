package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// What the person on call sees of one reclaim (issue 35, items 2 and 3):
// spot holds 8 of 10 and its pods use 2, 2 and 4 (no more than its
// grant); gold (priority 100) asks 6. spot's slice records exactly one
// Warning event, Reclaimed (no Normal Reclaimed, no OverGrant, no
// BudgetExhausted), from the shrink to its admission of gold and after.
// gold's message says which reclaimed resource is still in use, not how
// much: a pod that ends changes the budget's figures (Budget.Used, the
// SliceBudget's status, the metrics), not gold's condition, which is not
// written again (issue 42 withdrew issue 35's "figures of now").
func TestOneReclaimOneWarningAndAStableWaiter(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	nsS := tenantNamespace(t, "oncall-spot", "cluster-oncall-spot")
	nsG := tenantNamespace(t, "oncall-gold", "cluster-oncall-gold")
	offloaded := testkit.Namespace(t, cp, "oncall-offloaded")
	b, err := budget.New("oncall", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithPreemption())
	require.NoError(t, err)
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "10", "oc-spot", "oc-gold")
	spotAndGold(t, b, "oc-spot", "oc-gold")
	create(t, sliceIn(nsS, "s", "oc-spot", slicetest.WithConsumer("cluster-oncall-spot"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "spot Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, nsS, "s")) && quotaIs(nsS, "s", "8")()
	})
	user := quotaUser(t, nsS)
	p1 := runShadowPod(t, offloaded, "p1", user, "2")
	p2 := runShadowPod(t, offloaded, "p2", user, "2")
	runShadowPod(t, offloaded, "p3", user, "4")
	testkit.Eventually(t, "the budget counts spot's pods", func() bool { u := b.Used(); return u.Cpu().Value() == 8 })

	create(t, sliceIn(nsG, "g", "oc-gold", slicetest.WithConsumer("cluster-oncall-gold"), slicetest.WithRequest(corev1.ResourceCPU, "6")))
	testkit.Eventually(t, "spot shrunk to 4, gold waiting for 4 still in use", func() bool {
		rs := get(t, nsS, "s")
		g := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
		return rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0 && g != nil &&
			strings.HasSuffix(g.Message, "waiting for reclaimed capacity still in use: cpu")
	})

	// A pod that ends changes what the budget counts, not what blocks gold.
	g := get(t, nsG, "g")
	told := conditions.Get(g, authv1beta1.ResourceSliceConditionTypeResources).Message
	assert.Equal(t, "budget oncall: cpu: asked 6, waits until 6 is free; waiting for reclaimed capacity still in use: cpu", told)
	require.NoError(t, cp.Client.Delete(ctx, p1))
	testkit.Eventually(t, "the budget counts 6 in use once p1 ended", func() bool { u := b.Used(); return u.Cpu().Value() == 6 })
	testkit.Consistently(t, 1500*time.Millisecond, "gold's condition is not written again", func() bool {
		return get(t, nsG, "g").ResourceVersion == g.ResourceVersion
	})
	require.NoError(t, cp.Client.Delete(ctx, p2))
	testkit.Eventually(t, "gold admitted once spot's pods use 4", func() bool { return conditions.IsAccepted(get(t, nsG, "g")) })
	time.Sleep(2 * time.Second) // what a later reconcile of spot would add

	var warnings, reclaimedNormal []string
	for _, e := range eventsFor(t, nsS, "s") {
		switch {
		case e.Type == corev1.EventTypeWarning:
			warnings = append(warnings, e.Reason)
		case e.Reason == budget.ReasonReclaimed:
			reclaimedNormal = append(reclaimedNormal, e.Reason)
		}
	}
	assert.Equal(t, []string{budget.ReasonReclaimed}, warnings, "one reclaim, one Warning event")
	assert.Empty(t, reclaimedNormal, "no Normal event for the same reclaim")
	c := conditions.Get(get(t, nsS, "s"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, budget.ReasonReclaimed, c.Reason)
	assert.True(t, strings.HasPrefix(c.Message, "reclaimed: keeps its current offer; the larger one waits: budget oncall: "),
		"the message says what spot waits for now: %q", c.Message)
	over := b.Used() // the budget counts 4 + 6
	assert.Equal(t, int64(10), over.Cpu().Value())
	w.Check(t)
}

// A slice that freed capacity alone cannot admit says what would have to
// change (issue 35, item 4): acme holds 8 of its 16-CPU consumer limit in a
// 20-CPU budget another consumer fills to 16; acme's second slice asks 12.
// Its message names the consumer limit and what would have to change, with
// stable figures only (what acme's other slices hold moves).
func TestWaiterNamesWhatWouldHaveToChange(t *testing.T) {
	cp.Require(t)
	nsA := tenantNamespace(t, "nevfits-acme", "cluster-nf-acme")
	nsB := tenantNamespace(t, "nevfits-globex", "cluster-nf-globex")
	b, err := budget.New("neverfits", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")},
		budget.WithConsumerLimit(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}))
	require.NoError(t, err)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "nf", accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	create(t, sliceIn(nsA, "a1", "nf", slicetest.WithConsumer("cluster-nf-acme"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	create(t, sliceIn(nsB, "b1", "nf", slicetest.WithConsumer("cluster-nf-globex"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "both Accepted", decided(nsA, "a1"))
	testkit.Eventually(t, "both Accepted", decided(nsB, "b1"))
	create(t, sliceIn(nsA, "a2", "nf", slicetest.WithConsumer("cluster-nf-acme"), slicetest.WithRequest(corev1.ResourceCPU, "12")))
	c := conditions.Get(waitForDecision(t, nsA, "a2"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, c.Status)
	assert.Equal(t, budget.ReasonExhausted, c.Reason)
	assert.Equal(t, `budget neverfits: cpu: asked 12, waits until 12 is free (cpu: consumer "cluster-nf-acme" would go over its limit 16 with what its other slices hold or are promised: `+
		`it fits only if they release capacity or its limit is raised)`, c.Message)
}

// restartRounds is how many rounds TestRestartAsAVictimsPodEnds runs:
// SLICECLASS_RESTART_ROUNDS, else 3.
func restartRounds(t *testing.T) int {
	if v := os.Getenv("SLICECLASS_RESTART_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "SLICECLASS_RESTART_ROUNDS")
		return n
	}
	return 3
}

// A restart in the middle of a reclaim, as one of the victim's pods ends
// (issue 35, item 1): spot (priority 0) was shrunk 8 → 4 for gold (100),
// whose 6 wait for spot's pods (4 and 4). The manager stops; a new one
// starts serving both classes and, as it starts, one of spot's pods ends.
// Whichever class the new leader decides first, spot's grant, as an
// independent watch sees it, never grows after the restart: gold is
// admitted and spot ends at 4, shrunk once. Rounds:
// SLICECLASS_RESTART_ROUNDS (3 by default).
func TestRestartAsAVictimsPodEnds(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	for i := range restartRounds(t) {
		t.Run(fmt.Sprintf("round%d", i), func(t *testing.T) {
			spotC, goldC := fmt.Sprintf("rr%d-spot", i), fmt.Sprintf("rr%d-gold", i)
			nsS := tenantNamespace(t, fmt.Sprintf("rr%d-spot", i), fmt.Sprintf("cluster-rr%d-spot", i))
			nsG := tenantNamespace(t, fmt.Sprintf("rr%d-gold", i), fmt.Sprintf("cluster-rr%d-gold", i))
			offloaded := testkit.Namespace(t, cp, fmt.Sprintf("rr%d-offloaded", i))
			newBudget := func() *budget.Budget {
				b, err := budget.New(fmt.Sprintf("rr%d", i), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithPreemption())
				require.NoError(t, err)
				return b
			}
			w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "10", spotC, goldC)
			m := spotAndGold(t, newBudget(), spotC, goldC)
			create(t, sliceIn(nsS, "s", spotC, slicetest.WithConsumer(fmt.Sprintf("cluster-rr%d-spot", i)), slicetest.WithRequest(corev1.ResourceCPU, "8")))
			testkit.Eventually(t, "spot Accepted with 8 and its Quota at 8", func() bool {
				return conditions.IsAccepted(get(t, nsS, "s")) && quotaIs(nsS, "s", "8")()
			})
			user := quotaUser(t, nsS)
			p1 := runShadowPod(t, offloaded, "p1", user, "4")
			runShadowPod(t, offloaded, "p2", user, "4")
			create(t, sliceIn(nsG, "g", goldC, slicetest.WithConsumer(fmt.Sprintf("cluster-rr%d-gold", i)), slicetest.WithRequest(corev1.ResourceCPU, "6")))
			testkit.Eventually(t, "spot shrunk to 4 and gold waiting", func() bool {
				rs := get(t, nsS, "s")
				g := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
				return rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0 && g != nil && g.Status == authv1beta1.ResourceSliceConditionDenied
			})
			m.Stop()

			b := newBudget()
			spotAndGold(t, b, spotC, goldC)
			require.NoError(t, cp.Client.Delete(ctx, p1)) // as the new leader starts
			testkit.Eventually(t, "gold admitted once spot's pods use 4", func() bool { return conditions.IsAccepted(get(t, nsG, "g")) })
			testkit.Consistently(t, time.Second, "spot keeps 4", func() bool {
				return get(t, nsS, "s").Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0
			})
			w.CaughtUp(t)
			if offers := w.OffersOf("s"); !assert.ObjectsAreEqual([]string{"none", "8", "4"}, offers) {
				t.Errorf("spot's grant grew after the restart: %s (gold: %s); every event:\n%s", w.OfferLog("s"), w.OfferLog("g"), w.Timeline())
			}
			w.Check(t)
		})
	}
}

// OverGrant keeps its one meaning: pods running past a grant they were
// created under (Liqo's enforcement off; no webhook runs here, as when a
// provider turned it off). A slice granted 2 whose pods use 4 records an
// OverGrant Warning; the budget counts the 4.
func TestOverGrantWhenPodsPassTheirGrant(t *testing.T) {
	cp.Require(t)
	ns := tenantNamespace(t, "overgrant", "cluster-overgrant")
	offloaded := testkit.Namespace(t, cp, "overgrant-offloaded")
	b, err := budget.New("overgrant", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
	require.NoError(t, err)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "og", accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	create(t, sliceIn(ns, "s", "og", slicetest.WithConsumer("cluster-overgrant"), slicetest.WithRequest(corev1.ResourceCPU, "2")))
	testkit.Eventually(t, "Accepted with 2 and its Quota at 2", func() bool {
		return conditions.IsAccepted(get(t, ns, "s")) && quotaIs(ns, "s", "2")()
	})
	user := quotaUser(t, ns)
	runShadowPod(t, offloaded, "p1", user, "2")
	runShadowPod(t, offloaded, "p2", user, "2")
	testkit.Eventually(t, "the budget counts the pods' 4", func() bool { u := b.Used(); return u.Cpu().Value() == 4 })
	testkit.Eventually(t, "an OverGrant Warning", hasEventWhere(t, ns, "s", func(_, typ, reason, note string) bool {
		return typ == corev1.EventTypeWarning && reason == "OverGrant" && strings.Contains(note, "by cpu 2")
	}))
}
