package integration

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Issue 50's first end-to-end failure: gold (10, takes back from lower
// priorities) and spot (2, may borrow 10) share a cohort; spot's slice
// holds 12. Spot's class is stopped at run time: its slice keeps its grant
// and its Quota, as documented, so the cohort must go on counting it. Gold
// then asks 10: it must not be admitted while spot's slice holds 12 of the
// cohort's 12 (on today's main it was, and Liqo's Quotas summed to 22).
func TestCohortStoppedBorrowerStillCounts(t *testing.T) {
	cp.Require(t)
	nsS := tenantNamespace(t, "stopped-spot", "cluster-stopped-spot")
	nsG := tenantNamespace(t, "stopped-gold", "cluster-stopped-gold")
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	gold, err := budget.New("stopped-gold", cpu("10"), budget.WithCohort("stopped"), budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimLowerPriority))
	require.NoError(t, err)
	spot, err := budget.New("stopped-spot", cpu("2"), budget.WithCohort("stopped"), budget.WithBorrowingLimit(cpu("10")))
	require.NoError(t, err)
	var cs *resourceslice.ClassSet
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		var err error
		cs, err = resourceslice.NewClassSet(mgr, fastBackoff(), resourceslice.WithoutTenantRule())
		return err
	})
	require.NoError(t, cs.Serve("stopped-spot", accept("Granted", nil), resourceslice.WithBudget(spot), resourceslice.WithPriority(0)))
	require.NoError(t, cs.Serve("stopped-gold", accept("Granted", nil), resourceslice.WithBudget(gold), resourceslice.WithPriority(100)))

	create(t, sliceIn(nsS, "s", "stopped-spot", slicetest.WithConsumer("cluster-stopped-spot"), slicetest.WithRequest(corev1.ResourceCPU, "12")))
	testkit.Eventually(t, "spot Accepted with 12 and its Quota at 12", func() bool {
		return offerIs(t, nsS, "s", "12", "") && quotaIs(nsS, "s", "12")()
	})
	require.NoError(t, cs.Stop(context.Background(), "stopped-spot"))

	create(t, sliceIn(nsG, "g", "stopped-gold", slicetest.WithConsumer("cluster-stopped-gold"), slicetest.WithRequest(corev1.ResourceCPU, "10")))
	testkit.Eventually(t, "gold decided: waiting", func() bool {
		c := conditions.Get(get(t, nsG, "g"), authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied
	})
	testkit.Consistently(t, 3*time.Second, "gold waits while spot's stopped slice holds 12, and the Quotas stay within the cohort's 12", func() bool {
		sq, _ := quotaCPU(nsS, "s")
		gq, _ := quotaCPU(nsG, "g")
		sq.Add(gq)
		return !conditions.IsAccepted(get(t, nsG, "g")) && sq.Cmp(resource.MustParse("12")) <= 0
	})
}
