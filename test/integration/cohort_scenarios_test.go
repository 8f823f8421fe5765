package integration

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Issue 50's eight scenarios, found at the ledger's own API, as a user
// meets them on a cluster (see cohort_snapshot_test.go for the setting).
// Each asserts what deciding on a snapshot promises (DESIGN.md turn 7):
// caps and promises recomputed from the books and the waiting slices,
// members' waiters in one order, a member not counted deciding nothing.

// Scenario 1, a lender's class stopped and served again at run time:
// gold's slice holds its 10; while gold's class is stopped, and as it is
// served again, spot (2, may borrow 10) asks 12 (asked again and again as
// gold's class starts). Gold's 10 are held, not idle: spot is never
// admitted beyond its own 2 (the cohort's Quotas stay within 12); once
// gold's slice is deleted, spot is admitted with 12.
func TestSnapshotStoppedLenderStillCounted(t *testing.T) {
	cp.Require(t)
	nsS, nsG := tenant(t, "snap1-spot"), tenant(t, "snap1-gold")
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "12", "snap1-spot", "snap1-gold")
	sc := startCohort(t, []sbMember{
		member("snap1-gold", "snap1", "10", reclaiming(v1alpha1.CohortReclaimAny)),
		member("snap1-spot", "snap1", "2", borrowingUpTo("10")),
	}, sbClass{"snap1-spot", 0, []string{"snap1-spot"}}, sbClass{"snap1-gold", 100, []string{"snap1-gold"}})

	g := ask(t, nsG, "snap1-g", "snap1-gold", "10")
	testkit.Eventually(t, "gold Accepted with 10 and its Quota at 10", func() bool {
		return accepted(t, g, "10")() && quotaIs(g.ns, g.name, "10")()
	})
	sc.stop("snap1-gold")
	s := ask(t, nsS, "snap1-s", "snap1-spot", "12")
	quotasStayWithin(t, overcommitWindow, "12", []sliceRef{s, g}, s)
	sc.serve("snap1-gold")
	pokeWhileServing(t, s, "12", "11", "2")
	quotasStayWithin(t, overcommitWindow, "12", []sliceRef{s, g}, s)

	require.NoError(t, cp.Client.Delete(context.Background(), get(t, g.ns, g.name)))
	testkit.Eventually(t, "spot admitted with 12 once gold's slice is gone", accepted(t, s, "12"))
	w.Check(t)
}

// Scenario 1, a takeover: a new leader starts while gold's slice holds its
// 10 and spot's 12 waits (asked again and again as the leader starts).
// Until gold's books are counted, gold's 10 are not idle: spot is never
// admitted beyond its own 2.
func TestSnapshotTakeoverCountsLenderFirst(t *testing.T) {
	cp.Require(t)
	nsS, nsG := tenant(t, "snap1t-spot"), tenant(t, "snap1t-gold")
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "12", "snap1t-spot", "snap1t-gold")
	members := []sbMember{
		member("snap1t-gold", "snap1t", "10", reclaiming(v1alpha1.CohortReclaimAny)),
		member("snap1t-spot", "snap1t", "2", borrowingUpTo("10")),
	}
	classes := []sbClass{{"snap1t-spot", 0, []string{"snap1t-spot"}}, {"snap1t-gold", 100, []string{"snap1t-gold"}}}
	first := startCohort(t, members, classes...)
	g := ask(t, nsG, "snap1t-g", "snap1t-gold", "10")
	testkit.Eventually(t, "gold Accepted with 10 and its Quota at 10", func() bool {
		return accepted(t, g, "10")() && quotaIs(g.ns, g.name, "10")()
	})
	first.m.Stop()

	s := ask(t, nsS, "snap1t-s", "snap1t-spot", "12")
	serveCohort(t, []string{"snap1t-gold", "snap1t-spot"}, classes...)
	pokeWhileServing(t, s, "12", "11", "2")
	quotasStayWithin(t, overcommitWindow, "12", []sliceRef{s, g}, s)
	require.NoError(t, cp.Client.Delete(context.Background(), get(t, g.ns, g.name)))
	testkit.Eventually(t, "spot admitted with 12 once gold's slice is gone", accepted(t, s, "12"))
	w.Check(t)
}

// Scenario 3, one request to two members: gold (10) and silver (4) lend,
// spot (2, may borrow 14) holds 11; the cohort has 5 idle. A class drawing
// from both gold and silver asks 3: it needs 3 of each, 6 of the one
// pool, and waits (the members' books never hold more than the cohort's
// 16); once spot's slice is deleted it is admitted.
func TestSnapshotTwoMemberClassJudgedOnce(t *testing.T) {
	cp.Require(t)
	nsS, nsB := tenant(t, "snap3-spot"), tenant(t, "snap3-both")
	startCohort(t, []sbMember{
		member("snap3-gold", "snap3", "10"),
		member("snap3-silver", "snap3", "4"),
		member("snap3-spot", "snap3", "2", borrowingUpTo("14")),
	}, sbClass{"snap3-spot", 0, []string{"snap3-spot"}}, sbClass{"snap3-both", 50, []string{"snap3-gold", "snap3-silver"}})

	s := ask(t, nsS, "snap3-s", "snap3-spot", "11")
	testkit.Eventually(t, "spot Accepted with 11, its SliceBudget showing it", func() bool {
		return accepted(t, s, "11")() && cpuIs(sliceBudget(t, cp.Client, "snap3-spot").Status.Used, "11")
	})
	b := ask(t, nsB, "snap3-b", "snap3-both", "3")
	waitForDecision(t, b.ns, b.name)
	members := []string{"snap3-gold", "snap3-silver", "snap3-spot"}
	ok := testkit.Every(50*time.Millisecond).Holds(overcommitWindow, func() bool {
		used, each := membersUsed(t, members...)
		if used.Cmp(resource.MustParse("16")) > 0 {
			t.Errorf("the members' books hold %s CPU against the cohort's 16: %s; the two-member slice: %s", used.String(), each, resourcesMessage(t, b))
			return false
		}
		if conditions.IsAccepted(get(t, b.ns, b.name)) {
			time.Sleep(1500 * time.Millisecond) // a SliceBudget's status is written at most about once a second
			_, each = membersUsed(t, members...)
			t.Errorf("the two-member slice is Accepted with 3 of gold's and 3 of silver's while the cohort has 5 idle; the members' books then: %s", each)
			return false
		}
		return true
	})
	if !ok {
		t.FailNow()
	}
	require.NoError(t, cp.Client.Delete(context.Background(), get(t, s.ns, s.name)))
	testkit.Eventually(t, "the two-member slice admitted with 3 once spot's slice is gone", accepted(t, b, "3"))
}

// reclaimSetting is scenarios 4 to 7's start: gold (10, takes back from
// anyone) and spot (2, may borrow 10) in cohort name (12); spot's slice
// holds 12 and its pod uses 12; gold asks 10 and spot is shrunk to its 2
// (Reclaimed) while gold waits for spot's pod. spotEdits change spot's
// SliceBudget. It returns spot's and gold's slices and spot's pod.
func reclaimSetting(t *testing.T, name string, spotEdits ...func(*v1alpha1.SliceBudgetSpec)) (s, g sliceRef, pod *offloadingv1beta1.ShadowPod) {
	t.Helper()
	nsS, nsG := tenant(t, name+"-spot"), tenant(t, name+"-gold")
	offloaded := testkit.Namespace(t, cp, name+"-offloaded")
	startCohort(t, []sbMember{
		member(name+"-gold", name, "10", reclaiming(v1alpha1.CohortReclaimAny)),
		member(name+"-spot", name, "2", append([]func(*v1alpha1.SliceBudgetSpec){borrowingUpTo("10")}, spotEdits...)...),
	}, sbClass{name + "-spot", 0, []string{name + "-spot"}}, sbClass{name + "-gold", 100, []string{name + "-gold"}})
	s = ask(t, nsS, name+"-s", name+"-spot", "12")
	testkit.Eventually(t, "spot Accepted with 12 and its Quota at 12", func() bool {
		return accepted(t, s, "12")() && quotaIs(s.ns, s.name, "12")()
	})
	pod = runShadowPod(t, offloaded, "spot-pod", quotaUser(t, nsS), "12")
	g = ask(t, nsG, name+"-g", name+"-gold", "10")
	testkit.Eventually(t, "spot shrunk to its 2 for gold, gold waiting for spot's pod", func() bool {
		rs := get(t, g.ns, g.name)
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return offerIs(t, s.ns, s.name, "2", budget.ReasonReclaimed) && c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied
	})
	return s, g, pod
}

// Scenario 4, the waiter a lender reclaims for is deleted: spot is shrunk
// to 2 for gold's 10, then gold's slice is deleted. No waiter needs the
// cap any more: spot's slice is Accepted with its 12 again.
func TestSnapshotDeletedWaiterLiftsCap(t *testing.T) {
	cp.Require(t)
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "12", "snap4-spot", "snap4-gold")
	s, g, _ := reclaimSetting(t, "snap4")
	require.NoError(t, cp.Client.Delete(context.Background(), get(t, g.ns, g.name)))
	eventuallySays(t, "spot Accepted with its 12 again once gold's waiter is gone", accepted(t, s, "12"),
		func() string { return resourcesMessage(t, s) })
	w.Check(t)
}

// Scenario 4 with spot's evictionAfterSeconds: gold's waiter is deleted
// before spot's pod would be evicted for it. Nobody needs the capacity
// any more: spot's pod is never evicted, and spot gets its 12 back.
func TestSnapshotDeletedWaiterEvictsNothing(t *testing.T) {
	cp.Require(t)
	s, g, pod := reclaimSetting(t, "snap4e", func(spec *v1alpha1.SliceBudgetSpec) { spec.EvictionAfterSeconds = ptr.To[int32](2) })
	require.NoError(t, cp.Client.Delete(context.Background(), get(t, g.ns, g.name)))
	testkit.Consistently(t, overcommitWindow, "spot's pod is not evicted for a waiter that is gone", func() bool {
		var sp offloadingv1beta1.ShadowPod
		return cp.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &sp) == nil && sp.DeletionTimestamp.IsZero()
	})
	eventuallySays(t, "spot Accepted with its 12 again", accepted(t, s, "12"), func() string { return resourcesMessage(t, s) })
}

// Scenario 5's mirror, the borrower leaving the cohort mid-reclaim: spot
// is shrunk to 2 for gold's 10 while its pod uses 12, then spot's
// SliceBudget leaves the cohort. Gold is not admitted while spot's pod
// still uses what gold lent (offers, Quotas and pods in use never above
// 12), and is admitted once spot's pod ends: nothing is stranded.
func TestSnapshotBorrowerLeavesMidReclaim(t *testing.T) {
	cp.Require(t)
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "12", "snap5b-spot", "snap5b-gold")
	s, g, pod := reclaimSetting(t, "snap5b")
	editSliceBudget(t, cp.Client, "snap5b-spot", func(spec *v1alpha1.SliceBudgetSpec) {
		spec.Cohort = ""
		spec.BorrowingLimit = nil
	})
	quotasStayWithin(t, overcommitWindow, "12", []sliceRef{s, g}, g)
	require.NoError(t, cp.Client.Delete(context.Background(), pod))
	eventuallySays(t, "gold admitted with 10 once spot's pod is gone", accepted(t, g, "10"), func() string { return resourcesMessage(t, g) })
	w.Check(t)
}

// Scenario 6, the lender's reclaimWithinCohort set to Never mid-reclaim:
// gold's waiter may take nothing back any more, so no cap is kept for it:
// spot's slice is Accepted with its 12 again, and gold waits, saying why,
// until spot's slice is deleted, when it is admitted.
func TestSnapshotReclaimNeverLiftsCap(t *testing.T) {
	cp.Require(t)
	w := grantwatch.WatchHolds(t, cp.Config, cp.Scheme, "12", "snap6-spot", "snap6-gold")
	s, g, _ := reclaimSetting(t, "snap6")
	editSliceBudget(t, cp.Client, "snap6-gold", func(spec *v1alpha1.SliceBudgetSpec) {
		spec.Preemption.ReclaimWithinCohort = v1alpha1.CohortReclaimNever
	})
	eventuallySays(t, "spot Accepted with its 12 again once gold may not take back", accepted(t, s, "12"),
		func() string { return resourcesMessage(t, s) })
	waiting(t, g, "snap6-gold", "snap6")
	require.NoError(t, cp.Client.Delete(context.Background(), get(t, s.ns, s.name)))
	eventuallySays(t, "gold admitted with 10 once spot's slice is gone", accepted(t, g, "10"), func() string { return resourcesMessage(t, g) })
	w.Check(t)
}

// Scenario 8, freed capacity in one order over the cohort: lender (8)
// holds its own 8 in two slices; a (0) and b (0) borrow all they hold.
// a's priority-10 slice asks 8 and a's priority-1 slice asks 4, then b's
// priority-5 slice asks 4: all wait, all must borrow. One of the lender's
// slices is deleted: its 4 cannot serve the priority-10 slice, and go to
// the priority-5 slice, next in the one order over the cohort, not to the
// member whose highest waiter is highest.
func TestSnapshotFreedCapacityInOneOrder(t *testing.T) {
	cp.Require(t)
	nsL, nsA, nsA2, nsB := tenant(t, "snap8-lender"), tenant(t, "snap8-a"), tenant(t, "snap8-a2"), tenant(t, "snap8-b")
	startCohort(t, []sbMember{
		member("snap8-lender", "snap8", "8"),
		member("snap8-a", "snap8", "0"),
		member("snap8-b", "snap8", "0"),
	}, sbClass{"snap8-own", 0, []string{"snap8-lender"}},
		sbClass{"snap8-a-high", 10, []string{"snap8-a"}}, sbClass{"snap8-a-low", 1, []string{"snap8-a"}},
		sbClass{"snap8-b-mid", 5, []string{"snap8-b"}})

	own := ask(t, nsL, "snap8-own", "snap8-own", "4")
	own2 := ask(t, nsL, "snap8-own2", "snap8-own", "4")
	testkit.Eventually(t, "the lender's slices Accepted with 4 each", func() bool { return accepted(t, own, "4")() && accepted(t, own2, "4")() })
	high := ask(t, nsA2, "snap8-high", "snap8-a-high", "8")
	waiting(t, high, "snap8-a", "snap8")
	low := ask(t, nsA, "snap8-low", "snap8-a-low", "4")
	waiting(t, low, "snap8-a", "snap8")
	waitNextSecond() // the priority-5 slice is the younger: only priority puts it first
	mid := ask(t, nsB, "snap8-mid", "snap8-b-mid", "4")
	waiting(t, mid, "snap8-b", "snap8")

	require.NoError(t, cp.Client.Delete(context.Background(), get(t, own.ns, own.name)))
	testkit.Eventually(t, "one of the waiters admitted with the freed 4", func() bool {
		return conditions.IsAccepted(get(t, low.ns, low.name)) || conditions.IsAccepted(get(t, mid.ns, mid.name))
	})
	require.True(t, accepted(t, mid, "4")(), "the priority-5 slice must be admitted first: it is %s; the priority-1 slice is %s",
		resourcesMessage(t, mid), resourcesMessage(t, low))
	testkit.Consistently(t, overcommitWindow, "the priority-1 slice waits (the cohort is full)", func() bool {
		return !conditions.IsAccepted(get(t, low.ns, low.name))
	})
}
