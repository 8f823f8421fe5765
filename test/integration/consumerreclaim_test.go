package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// A waiter its own consumer limit keeps out takes nothing from another
// consumer (issue 42, item 1), with Liqo's QuotaCreator: in a 16-CPU
// budget with preemption, globex's two spot slices (priority 0) hold 8
// each; acme, limited to 4 (its own limit, or the budget's), asks 6 in a
// gold slice (priority 100). Every spot slice keeps its grant and Quota
// while acme's slice waits; acme's 3-CPU slice then takes exactly 3 (spot
// keeps 13, the budget is full, nothing idle). Offers, Quotas and pods in
// use never sum past 16.
func TestOverLimitWaiterReclaimsNothing(t *testing.T) {
	cp.Require(t)
	cases := map[string]struct {
		reason string
		opts   []budget.Option
		limits func(b *budget.Budget, acme, globex string) error
	}{
		"ConsumersOwnLimit": {reason: "acme's own limit is 4",
			limits: func(b *budget.Budget, acme, _ string) error {
				return b.SetConsumerLimit(acme, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
			}},
		"BudgetWideLimit": {reason: "every consumer's limit is 4 (globex's own is 16)",
			opts: []budget.Option{budget.WithConsumerLimit(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})},
			limits: func(b *budget.Budget, _, globex string) error {
				return b.SetConsumerLimit(globex, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")})
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := "olw-" + strings.ToLower(name[:6])
			acme, globex := "cluster-"+p+"-acme", "cluster-"+p+"-globex"
			nsA := tenantNamespace(t, p+"-acme", acme)
			nsG := tenantNamespace(t, p+"-globex", globex)
			spotC, goldC := p+"-spot", p+"-gold"
			b, err := budget.New(p, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}, append(tc.opts, budget.WithPreemption())...)
			require.NoError(t, err)
			require.NoError(t, tc.limits(b, acme, globex))
			w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "16", spotC, goldC)
			spotAndGold(t, b, spotC, goldC)
			s1, s2 := p+"-s1", p+"-s2"
			create(t, sliceIn(nsG, s1, spotC, slicetest.WithConsumer(globex), slicetest.WithRequest(corev1.ResourceCPU, "8")))
			waitNextSecond() // s2 is the newer
			create(t, sliceIn(nsG, s2, spotC, slicetest.WithConsumer(globex), slicetest.WithRequest(corev1.ResourceCPU, "8")))
			testkit.Eventually(t, "globex's spot slices Accepted with 8 each, their Quotas at 8", func() bool {
				return conditions.IsAccepted(get(t, nsG, s1)) && conditions.IsAccepted(get(t, nsG, s2)) &&
					quotaIs(nsG, s1, "8")() && quotaIs(nsG, s2, "8")()
			})

			big, small := p+"-big", p+"-small"
			create(t, sliceIn(nsA, big, goldC, slicetest.WithConsumer(acme), slicetest.WithRequest(corev1.ResourceCPU, "6")))
			c := conditions.Get(waitForDecision(t, nsA, big), authv1beta1.ResourceSliceConditionTypeResources)
			assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, c.Status, "acme's 6 waits: %s", tc.reason)
			assert.NotContains(t, c.Message, "waiting for reclaimed capacity", "nothing is reclaimed for it: %s", c.Message)
			testkit.Consistently(t, 2*time.Second, "every spot slice keeps its 8 while acme's over-limit slice waits", func() bool {
				for _, s := range []string{s1, s2} {
					rs := get(t, nsG, s)
					rc := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
					if rs.Status.Resources.Cpu().Cmp(resource.MustParse("8")) != 0 || rc.Reason == budget.ReasonReclaimed || !quotaIs(nsG, s, "8")() {
						return false
					}
				}
				return !conditions.IsAccepted(get(t, nsA, big))
			})
			reclaiming := ledger.Of(b).Reclaiming()
			assert.True(t, reclaiming.Cpu().IsZero(), "nothing being reclaimed: %v", reclaiming.Cpu())

			create(t, sliceIn(nsA, small, goldC, slicetest.WithConsumer(acme), slicetest.WithRequest(corev1.ResourceCPU, "3")))
			testkit.Eventually(t, "acme's 3-CPU slice Accepted", func() bool { return conditions.IsAccepted(get(t, nsA, small)) })
			testkit.Eventually(t, "the budget full: spot's 13 and acme's 3", func() bool { u := b.Used(); return u.Cpu().Value() == 16 })
			w.CaughtUp(t)
			assert.Equal(t, []string{"none", "8"}, w.OffersOf(s1), "the older spot slice is not touched")
			assert.Equal(t, []string{"none", "8", "5"}, w.OffersOf(s2), "the newer yields exactly the 3 acme's small slice lacked")
			assert.False(t, conditions.IsAccepted(get(t, nsA, big)), "acme's 6 still waits on its limit")
			w.Check(t)
		})
	}
}

// What was taken for a waiter goes back to its victims when it can no
// longer fit or leaves (issue 42, item 1): globex's spot slices hold 8
// each of 16 and the newer one's pods use its 8; acme (limit 10) asks 6 in
// a gold slice, and the newer spot slice is shrunk to 2 while its pods
// still use 8. Then acme's limit is cut to 4 (acme's slice could now never
// fit), or acme's slice is deleted: the spot slice is given its 8 back at
// once (its pods hold it; nobody else can use it), and nothing stays
// reclaimed. Offers, Quotas and pods in use never sum past 16.
func TestWaiterThatCannotFitGivesBack(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	cases := map[string]struct {
		reason string
		leave  func(t *testing.T, b *budget.Budget, acme, ns, name string)
	}{
		"LimitCut": {reason: "acme's limit is cut to 4: its 6 never fits",
			leave: func(t *testing.T, b *budget.Budget, acme, _, _ string) {
				require.NoError(t, b.SetConsumerLimit(acme, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}))
			}},
		"Deleted": {reason: "acme's waiting slice is deleted",
			leave: func(t *testing.T, _ *budget.Budget, _, ns, name string) {
				require.NoError(t, cp.Client.Delete(ctx, get(t, ns, name)))
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := "gb-" + strings.ToLower(name)
			acme, globex := "cluster-"+p+"-acme", "cluster-"+p+"-globex"
			nsA := tenantNamespace(t, p+"-acme", acme)
			nsG := tenantNamespace(t, p+"-globex", globex)
			offloaded := testkit.Namespace(t, cp, p+"-offloaded")
			spotC, goldC := p+"-spot", p+"-gold"
			b, err := budget.New(p, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}, budget.WithPreemption())
			require.NoError(t, err)
			require.NoError(t, b.SetConsumerLimit(acme, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}))
			w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "16", spotC, goldC)
			spotAndGold(t, b, spotC, goldC)
			s1, s2 := p+"-s1", p+"-s2"
			create(t, sliceIn(nsG, s1, spotC, slicetest.WithConsumer(globex), slicetest.WithRequest(corev1.ResourceCPU, "8")))
			waitNextSecond() // s2 is the newer
			create(t, sliceIn(nsG, s2, spotC, slicetest.WithConsumer(globex), slicetest.WithRequest(corev1.ResourceCPU, "8")))
			testkit.Eventually(t, "globex's spot slices Accepted with 8 each, their Quotas at 8", func() bool {
				return conditions.IsAccepted(get(t, nsG, s1)) && conditions.IsAccepted(get(t, nsG, s2)) &&
					quotaIs(nsG, s1, "8")() && quotaIs(nsG, s2, "8")()
			})
			user := sliceQuotaUser(t, nsG, s2)
			runShadowPod(t, offloaded, "p1", user, "4")
			runShadowPod(t, offloaded, "p2", user, "4")
			testkit.Eventually(t, "the budget counts s2's pods", func() bool { u := b.Used(); return u.Cpu().Value() == 16 })

			big := p + "-big"
			create(t, sliceIn(nsA, big, goldC, slicetest.WithConsumer(acme), slicetest.WithRequest(corev1.ResourceCPU, "6")))
			testkit.Eventually(t, "s2 shrunk to 2 for acme, whose 6 wait for s2's pods", func() bool {
				rs := get(t, nsG, s2)
				g := conditions.Get(get(t, nsA, big), authv1beta1.ResourceSliceConditionTypeResources)
				return rs.Status.Resources.Cpu().Cmp(resource.MustParse("2")) == 0 && g != nil && g.Status == authv1beta1.ResourceSliceConditionDenied &&
					strings.HasSuffix(g.Message, "waiting for reclaimed capacity still in use: cpu")
			})

			tc.leave(t, b, acme, nsA, big)
			testkit.Eventually(t, fmt.Sprintf("s2 given its 8 back (%s)", tc.reason), func() bool {
				rs := get(t, nsG, s2)
				rc := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
				return rs.Status.Resources.Cpu().Cmp(resource.MustParse("8")) == 0 && rc.Reason != budget.ReasonReclaimed
			})
			reclaiming := ledger.Of(b).Reclaiming()
			assert.True(t, reclaiming.Cpu().IsZero(), "nothing left being reclaimed: %v", reclaiming.Cpu())
			w.CaughtUp(t)
			assert.Equal(t, []string{"none", "8"}, w.OffersOf(s1), "the older spot slice is not touched")
			assert.Equal(t, []string{"none", "8", "2", "8"}, w.OffersOf(s2), "shrunk once, given back once")
			w.Check(t)
		})
	}
}

// sliceQuotaUser is the user of the Quota Liqo made for the slice name.
func sliceQuotaUser(t *testing.T, ns, name string) string {
	t.Helper()
	rs := get(t, ns, name)
	var list offloadingv1beta1.QuotaList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(ns)))
	for _, q := range list.Items {
		if o := metav1.GetControllerOf(&q); o != nil && o.UID == rs.UID {
			return q.Spec.User
		}
	}
	require.Failf(t, "no Quota", "no Quota of slice %s/%s", ns, name)
	return ""
}
