package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Issue 50 scenarios where capacity was stranded: a borrower's slice deleted
// while its class is stopped, a lender leaving its cohort mid-reclaim, and a
// waiter within its guarantee that may take back from anyone.

// Scenario 2, a borrower's last class stopped: gold (10, takes nothing
// back), silver (4, lends 2) and spot (2, may borrow 14); spot's slice
// holds 14, 12 of them borrowed. Spot's class is stopped: its slice keeps
// them, so gold's 10 waits (never 24 held against 16) until spot's slice
// is deleted, and is then admitted.
func TestSnapshotStoppedBorrowerStillHolds(t *testing.T) {
	cp.Require(t)
	nsS, nsG := tenant(t, "snap2-spot"), tenant(t, "snap2-gold")
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "16", "snap2-spot", "snap2-gold", "snap2-silver")
	sc := startCohort(t, []sbMember{
		member("snap2-gold", "snap2", "10"),
		member("snap2-silver", "snap2", "4", lendingUpTo("2")),
		member("snap2-spot", "snap2", "2", borrowingUpTo("14")),
	}, sbClass{"snap2-spot", 0, []string{"snap2-spot"}}, sbClass{"snap2-silver", 50, []string{"snap2-silver"}},
		sbClass{"snap2-gold", 100, []string{"snap2-gold"}})

	s := ask(t, nsS, "snap2-s", "snap2-spot", "14")
	testkit.Eventually(t, "spot Accepted with 14 and its Quota at 14", func() bool {
		return accepted(t, s, "14")() && quotaIs(s.ns, s.name, "14")()
	})
	sc.stop("snap2-spot")
	g := ask(t, nsG, "snap2-g", "snap2-gold", "10")
	waiting(t, g, "snap2-gold", "snap2")
	quotasStayWithin(t, overcommitWindow, "16", []sliceRef{s, g}, g)

	require.NoError(t, cp.Client.Delete(context.Background(), get(t, s.ns, s.name)))
	testkit.Eventually(t, "gold admitted with 10 once spot's slice is gone", accepted(t, g, "10"))
	w.Check(t)
}

// Scenario 5, a member leaving the cohort mid-reclaim: spot is shrunk to 2
// for gold's 10 while spot's pod uses 12; gold's SliceBudget then leaves
// the cohort. Nothing is over-committed for it (gold is not admitted while
// spot's pod still uses what gold lent: offers, Quotas and pods in use
// never above 12), and gold is admitted once spot's pod ends.
func TestSnapshotLenderLeavesMidReclaim(t *testing.T) {
	cp.Require(t)
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "12", "snap5-spot", "snap5-gold")
	s, g, pod := reclaimSetting(t, "snap5")
	editSliceBudget(t, cp.Client, "snap5-gold", func(spec *v1alpha1.SliceBudgetSpec) {
		spec.Cohort = ""
		spec.Preemption.ReclaimWithinCohort = ""
	})
	quotasStayWithin(t, overcommitWindow, "12", []sliceRef{s, g}, g)
	require.NoError(t, cp.Client.Delete(context.Background(), pod))
	eventuallySays(t, "gold admitted with 10 once spot's pod is gone", accepted(t, g, "10"), func() string { return resourcesMessage(t, g) })
	w.Check(t)
}

// A waiter that fits is admitted: gold (4, takes back from anyone),
// silver (4) and spot (2, may borrow 10) share a cohort; spot's slice
// holds 10. Silver's total is cut to 0: the cohort has 6, spot holds 10.
// Gold asks 2: it holds nothing of its 4 and may take back from anyone, so
// spot gives back what gold lacks (the cohort holds gold's 2 and at most 4
// of spot's) and gold is admitted with no other edit.
func TestSnapshotWaiterThatFitsIsAdmitted(t *testing.T) {
	cp.Require(t)
	nsS, nsG := tenant(t, "snapb-spot"), tenant(t, "snapb-gold")
	startCohort(t, []sbMember{
		member("snapb-gold", "snapb", "4", reclaiming(v1alpha1.CohortReclaimAny)),
		member("snapb-silver", "snapb", "4"),
		member("snapb-spot", "snapb", "2", borrowingUpTo("10")),
	}, sbClass{"snapb-spot", 0, []string{"snapb-spot"}}, sbClass{"snapb-silver", 50, []string{"snapb-silver"}},
		sbClass{"snapb-gold", 100, []string{"snapb-gold"}})

	s := ask(t, nsS, "snapb-s", "snapb-spot", "10")
	testkit.Eventually(t, "spot Accepted with 10", accepted(t, s, "10"))
	editSliceBudget(t, cp.Client, "snapb-silver", func(spec *v1alpha1.SliceBudgetSpec) { spec.Total = cpuList("0") })
	testkit.Eventually(t, "silver's capacity cut to 0", capacityIs(t, "snapb-silver", "0"))

	g := ask(t, nsG, "snapb-g", "snapb-gold", "2")
	eventuallySays(t, "gold admitted with 2, spot down to at most 4 of the cohort's 6", func() bool {
		return accepted(t, g, "2")() && offerAtMost(t, s, "4")
	}, func() string { return "gold " + resourcesMessage(t, g) + "; spot " + resourcesMessage(t, s) })
}

// lendingUpTo sets the member's lendingLimit in CPU.
func lendingUpTo(q string) func(*v1alpha1.SliceBudgetSpec) {
	return func(s *v1alpha1.SliceBudgetSpec) { s.LendingLimit = cpuList(q) }
}
