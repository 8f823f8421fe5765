package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Issue 50's three end-to-end cases (decide on a snapshot, DESIGN.md
// turn 7), as a user meets them: SliceBudgets in one cohort, one ClassSet,
// Liqo's QuotaCreator. Run them as a group with -run TestSnapshot.

// overcommitWindow is how long a test watches that nothing over-commits after
// the step that used to over-commit: a short, fixed window, not a deadline.
const overcommitWindow = 3 * time.Second

// Over-commit through a documented operation: gold (10, takes back from
// lower priorities) and spot (2, may borrow 10) share a cohort of 12;
// spot's slice holds 12. Spot's class is stopped at run time
// (ClassSet.Stop): its slice keeps its grant and Quota, as documented.
// Gold then asks 10: it must not be Accepted while spot holds the cohort's
// 12 (Liqo's Quotas never sum above 12), and its slice says why it waits.
// Served again, spot gives back what gold lacks and gold is admitted.
func TestSnapshotStoppedBorrowerIsNotOvercommitted(t *testing.T) {
	cp.Require(t)
	nsS, nsG := tenant(t, "snapa-spot"), tenant(t, "snapa-gold")
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "12", "snapa-spot", "snapa-gold")
	sc := startCohort(t, []sbMember{
		member("snapa-gold", "snapa", "10", reclaiming(v1alpha1.CohortReclaimLowerPriority)),
		member("snapa-spot", "snapa", "2", borrowingUpTo("10")),
	}, sbClass{"snapa-spot", 0, []string{"snapa-spot"}}, sbClass{"snapa-gold", 100, []string{"snapa-gold"}})

	s := ask(t, nsS, "snapa-s", "snapa-spot", "12")
	testkit.Eventually(t, "spot Accepted with 12 and its Quota at 12", func() bool {
		return accepted(t, s, "12")() && quotaIs(s.ns, s.name, "12")()
	})
	sc.stop("snapa-spot")

	g := ask(t, nsG, "snapa-g", "snapa-gold", "10")
	waiting(t, g, "snapa-gold", "snapa")
	quotasStayWithin(t, overcommitWindow, "12", []sliceRef{s, g}, g)
	waiting(t, g, "snapa-gold", "snapa")

	sc.serve("snapa-spot")
	testkit.Eventually(t, "spot, served again, shrunk to its own 2 for gold, and gold admitted with 10", func() bool {
		return offerIs(t, s.ns, s.name, "2", budget.ReasonReclaimed) && accepted(t, g, "10")()
	})
	w.Check(t)
}

// The same cohort as the issue walked it: silver cut to 0, gold (4, takes
// back from anyone) asks 2 while spot holds 10, then silver restored to 4:
// the cohort has 10 again, gold holds nothing of its 4, so spot gives back
// what gold lacks and gold is admitted, with no unrelated edit (it stalled
// until one). Whether gold was admitted before the restore does not
// matter here (TestSnapshotWaiterThatFitsIsAdmitted says it must be).
func TestSnapshotRestoredTotalNoStall(t *testing.T) {
	cp.Require(t)
	nsS, nsG := tenant(t, "snaps-spot"), tenant(t, "snaps-gold")
	startCohort(t, []sbMember{
		member("snaps-gold", "snaps", "4", reclaiming(v1alpha1.CohortReclaimAny)),
		member("snaps-silver", "snaps", "4"),
		member("snaps-spot", "snaps", "2", borrowingUpTo("10")),
	}, sbClass{"snaps-spot", 0, []string{"snaps-spot"}}, sbClass{"snaps-silver", 50, []string{"snaps-silver"}},
		sbClass{"snaps-gold", 100, []string{"snaps-gold"}})

	s := ask(t, nsS, "snaps-s", "snaps-spot", "10")
	testkit.Eventually(t, "spot Accepted with 10", accepted(t, s, "10"))
	editSliceBudget(t, cp.Client, "snaps-silver", func(spec *v1alpha1.SliceBudgetSpec) { spec.Total = cpuList("0") })
	testkit.Eventually(t, "silver's capacity cut to 0", capacityIs(t, "snaps-silver", "0"))
	g := ask(t, nsG, "snaps-g", "snaps-gold", "2")
	waitForDecision(t, g.ns, g.name)
	editSliceBudget(t, cp.Client, "snaps-silver", func(spec *v1alpha1.SliceBudgetSpec) { spec.Total = cpuList("4") })
	testkit.Eventually(t, "silver's capacity back to 4", capacityIs(t, "snaps-silver", "4"))
	eventuallySays(t, "gold admitted with 2 and spot within the 8 left of the cohort's 10", func() bool {
		return accepted(t, g, "2")() && offerAtMost(t, s, "8")
	}, func() string { return "gold " + resourcesMessage(t, g) + "; spot " + resourcesMessage(t, s) })
}

// A waiter is woken by the capacity it waits for: gold (4, takes nothing
// back), silver (4) and spot (2, may borrow 10); spot's slice holds 8.
// Silver's total is cut to 0 (the cohort has 6, spot holds 8) and gold's 2
// waits, as it must. Silver is restored to 4: the cohort has 10, spot
// holds 8, gold's 2 fits and is admitted, with no unrelated edit.
func TestSnapshotRestoredTotalWakesWaiter(t *testing.T) {
	cp.Require(t)
	nsS, nsG := tenant(t, "snapr-spot"), tenant(t, "snapr-gold")
	startCohort(t, []sbMember{
		member("snapr-gold", "snapr", "4"),
		member("snapr-silver", "snapr", "4"),
		member("snapr-spot", "snapr", "2", borrowingUpTo("10")),
	}, sbClass{"snapr-spot", 0, []string{"snapr-spot"}}, sbClass{"snapr-silver", 50, []string{"snapr-silver"}},
		sbClass{"snapr-gold", 100, []string{"snapr-gold"}})

	s := ask(t, nsS, "snapr-s", "snapr-spot", "8")
	testkit.Eventually(t, "spot Accepted with 8", accepted(t, s, "8"))
	editSliceBudget(t, cp.Client, "snapr-silver", func(spec *v1alpha1.SliceBudgetSpec) { spec.Total = cpuList("0") })
	testkit.Eventually(t, "silver's capacity cut to 0", capacityIs(t, "snapr-silver", "0"))

	g := ask(t, nsG, "snapr-g", "snapr-gold", "2")
	waiting(t, g, "snapr-gold", "snapr")
	editSliceBudget(t, cp.Client, "snapr-silver", func(spec *v1alpha1.SliceBudgetSpec) { spec.Total = cpuList("4") })
	restored := time.Now()
	testkit.Eventually(t, "gold admitted with 2 once silver is back to 4", accepted(t, g, "2"))
	t.Logf("gold admitted %s after silver's restore was written", time.Since(restored).Round(10*time.Millisecond))
	require.True(t, offerAtMost(t, s, "8"), "spot keeps its 8")
}

// Over its limit is a condition, never silence: gold (4), silver (4) and
// spot (2, may borrow 10); spot's slice holds 8 (borrowing 6). Spot's
// borrowingLimit is cut to 2: it holds 8 against the 4 it may hold. Its
// SliceBudget says so (CapacityBelowUsed=True, the message naming the
// cohort) with a Warning event; once the slice is released it is False.
func TestSnapshotBorrowingLimitCutShowsOverCommit(t *testing.T) {
	cp.Require(t)
	nsS := tenant(t, "snapc-spot")
	startCohort(t, []sbMember{
		member("snapc-gold", "snapc", "4"),
		member("snapc-silver", "snapc", "4"),
		member("snapc-spot", "snapc", "2", borrowingUpTo("10")),
	}, sbClass{"snapc-spot", 0, []string{"snapc-spot"}}, sbClass{"snapc-silver", 50, []string{"snapc-silver"}},
		sbClass{"snapc-gold", 100, []string{"snapc-gold"}})

	s := ask(t, nsS, "snapc-s", "snapc-spot", "8")
	testkit.Eventually(t, "spot Accepted with 8", accepted(t, s, "8"))
	editSliceBudget(t, cp.Client, "snapc-spot", func(spec *v1alpha1.SliceBudgetSpec) { spec.BorrowingLimit = cpuList("2") })

	eventuallySays(t, "spot's SliceBudget: CapacityBelowUsed=True naming cohort snapc", overCohort(t, "snapc-spot", "snapc"),
		func() string { return belowUsedCondition(t, "snapc-spot") })
	testkit.Eventually(t, "a Warning event CapacityBelowUsed on spot naming the cohort", warnedBelowUsed(t, "snapc-spot", "snapc"))

	require.NoError(t, cp.Client.Delete(context.Background(), get(t, s.ns, s.name)))
	testkit.Eventually(t, "spot's CapacityBelowUsed False once its slice is released", func() bool {
		c := meta(sliceBudget(t, cp.Client, "snapc-spot").Status.Conditions, "CapacityBelowUsed")
		return c != nil && c.Status == "False"
	})
}

// The cohort over its totals is a condition on each member concerned:
// gold (4), silver (4) and spot (2, may borrow 10); silver's slice holds
// 4, spot's 6 (borrowing 4 of gold's). Silver becomes a node pool that
// matches no node: the cohort has 6, its members hold 10. Silver and
// spot, which hold more than their own totals, say so
// (CapacityBelowUsed=True naming the cohort) with a Warning event each.
func TestSnapshotEmptyNodePoolShowsOverCommit(t *testing.T) {
	cp.Require(t)
	nsS, nsV := tenant(t, "snapn-spot"), tenant(t, "snapn-silver")
	startCohort(t, []sbMember{
		member("snapn-gold", "snapn", "4"),
		member("snapn-silver", "snapn", "4"),
		member("snapn-spot", "snapn", "2", borrowingUpTo("10")),
	}, sbClass{"snapn-spot", 0, []string{"snapn-spot"}}, sbClass{"snapn-silver", 50, []string{"snapn-silver"}},
		sbClass{"snapn-gold", 100, []string{"snapn-gold"}})

	v := ask(t, nsV, "snapn-v", "snapn-silver", "4")
	testkit.Eventually(t, "silver Accepted with 4", accepted(t, v, "4"))
	s := ask(t, nsS, "snapn-s", "snapn-spot", "6")
	testkit.Eventually(t, "spot Accepted with 6", accepted(t, s, "6"))
	editSliceBudget(t, cp.Client, "snapn-silver", func(spec *v1alpha1.SliceBudgetSpec) {
		spec.Total = nil
		spec.NodePool = &v1alpha1.NodePool{
			Selector:  &v1alpha1.NodeSelector{MatchLabels: map[string]v1alpha1.LabelValue{"snapshot-test-pool": "matches-no-node"}},
			Resources: []corev1.ResourceName{corev1.ResourceCPU},
		}
	})
	testkit.Eventually(t, "silver's capacity down to 0", capacityIs(t, "snapn-silver", "0"))

	for _, name := range []string{"snapn-silver", "snapn-spot"} {
		eventuallySays(t, name+": CapacityBelowUsed=True naming cohort snapn", overCohort(t, name, "snapn"),
			func() string { return belowUsedCondition(t, name) })
		testkit.Eventually(t, "a Warning event CapacityBelowUsed on "+name+" naming the cohort", warnedBelowUsed(t, name, "snapn"))
	}
}
