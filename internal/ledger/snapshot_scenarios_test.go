package ledger_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Issue 50's eight scenarios, and "a waiter that fits stalls", at the
// ledger's own API. Each is a missed unwind path of the remembered state
// (caps, promises, "reclaiming", give-backs): a decision made on a
// snapshot each cycle, with nothing to unwind, passes them all.

// cohortHeld is what the members' slices count together, in cpu.
func cohortHeld(trs ...tier) resource.Quantity {
	var sum resource.Quantity
	for _, tr := range trs {
		sum.Add(tr.l.Used()[corev1.ResourceCPU])
	}
	return sum
}

// TestScenarioUncountedMemberStillLends is scenario 1: gold's slices hold
// its 10, but its books were forgotten (a takeover, its feed restarted)
// and not counted again. Spot asking 14 must not be admitted against what
// gold's books do not show: the domain decides nothing until every member
// is counted.
func TestScenarioUncountedMemberStillLends(t *testing.T) {
	_, gold, spot, silver := tiers(t)
	grant(t, gold, ask(gold, "g1", cpu("10")))
	gold.l.ForgetAll() // gold's slice still holds 10 in the cluster
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{spot.l}, ask(spot, "s1", cpu("14")))
	if refusal == nil {
		spot.l.Done(as[0], ledger.Applied)
	}
	require.NotNil(t, refusal, "spot was admitted 14 while gold's uncounted slice holds 10 of the cohort's 16")
	assert.Equal(t, ledger.ReasonNotCounted, refusal.Reason, "the domain pauses while a member is not counted")
	_ = silver
}

// TestNewLeaderWaitsForEveryMembersFirstCount is scenario 1 as a new
// leader starts: every budget is new, and its feed (Counting) has not
// delivered its lists. Spot's feed synced first; gold's has not, so gold's
// books show nothing of what its slices hold (10) nor of its waiter. Spot
// must not grow into it (TestCohortRestartMidReclaim, on envtest, grew
// spot 4 → 14 → 4 so), until gold's feed counted.
func TestNewLeaderWaitsForEveryMembersFirstCount(t *testing.T) {
	_, gold, spot, _ := tiers(t)
	gold.l.Counting(gold.l.Epoch())
	spot.l.Counting(spot.l.Epoch())
	spot.l.Counted(spot.l.Epoch())
	_, refusal := ledger.AdmitAll([]*ledger.Ledger{spot.l}, ask(spot, "s1", cpu("14")))
	require.NotNil(t, refusal, "spot was admitted before gold's feed counted what gold's slices hold")
	assert.Equal(t, ledger.ReasonNotCounted, refusal.Reason)
	assert.Contains(t, refusal.Message, "gold")
	gold.l.Counted(gold.l.Epoch())
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{spot.l}, ask(spot, "s1", cpu("14")))
	require.Nil(t, refusal, "once every member is counted, the cohort admits")
	spot.l.Done(as[0], ledger.Applied)
}

// TestScenarioStoppedBorrowerLeaves is scenario 2: spot's slice holds 14
// (12 borrowed); its class is stopped, so its books are forgotten. Its
// slice still holds what Liqo enforces: gold asking its 10 must not be
// admitted (the cohort would hold 24 against 16).
func TestScenarioStoppedBorrowerLeaves(t *testing.T) {
	_, gold, spot, _ := tiers(t)
	grant(t, spot, ask(spot, "s1", cpu("14")))
	spot.l.Detach("spot")
	spot.l.ForgetAll() // the class's feed is released with its last class
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	if refusal == nil {
		gold.l.Done(as[0], ledger.Applied)
	}
	assert.NotNil(t, refusal, "gold was admitted 10 while spot's stopped slice holds 14 of the cohort's 16")
}

// TestScenarioTwoMembersOnePool is scenario 3: a request to gold and
// silver together is judged against one pool once, the second verdict on
// the snapshot the first one updated: with spot holding 11 of 16, 3 in
// each of them (6) does not fit.
func TestScenarioTwoMembersOnePool(t *testing.T) {
	_, gold, spot, silver := tiers(t)
	grant(t, spot, ask(spot, "s1", cpu("11")))
	r := ask(gold, "both", cpu("3"))
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{gold.l, silver.l}, r)
	if refusal == nil {
		gold.l.Done(as[0], ledger.Applied)
		silver.l.Done(as[1], ledger.Applied)
	}
	held := cohortHeld(gold, spot, silver)
	assert.LessOrEqual(t, held.Cmp(resource.MustParse("16")), 0, "the cohort counts %s against its 16", held.String())
}

// TestScenarioDeletedWaiterLeavesCap is scenario 4: gold reclaims 10 from
// spot for its waiter; the waiter's slice is deleted: spot keeps all it
// holds again.
func TestScenarioDeletedWaiterLeavesCap(t *testing.T) {
	gold, spot, _, _ := reclaimers(t)
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	require.Equal(t, "4", capOf(spot, "s1"))
	gold.l.ForgetSlice(key("g1"), uid("g1"))
	assert.Equal(t, "", capOf(spot, "s1"), "the waiter is gone: no cap without a waiter that needs it")
}

// TestScenarioMembershipChangeUnwindsNothing is scenario 5: gold leaves
// the cohort while spot is capped for it: no waiter in spot's domain
// needs the cap any more.
func TestScenarioMembershipChangeUnwindsNothing(t *testing.T) {
	gold, spot, _, _ := reclaimers(t)
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	require.Equal(t, "4", capOf(spot, "s1"))
	// Spot yields to 4 (its 2 and silver's 2): gold lends nothing now and
	// may leave; on its own it admits its waiter.
	spot.l.ObserveSlice(slice("s1", strconv.FormatInt(rvs.Add(1)+1, 10), cpu("4"), inClass("spot"), consumer("c-s1"), reclaimed))
	gold.l.JoinCohort(nil)
	require.Equal(t, "", gold.l.Cohort())
	as := admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	gold.l.Done(as[0], ledger.Applied)
	c, capped := spot.l.Cap(key("s1"))
	assert.False(t, capped, "spot keeps a cap (%s) for a waiter of a member that left and was admitted", c.Message)
}

// TestScenarioReclaimNeverStrandsWaiter is scenario 6: the lender's
// policy turns to Never while spot is capped for its waiter: the cap
// goes (nothing may be taken back), and when spot releases what the
// waiter needs, the waiter is woken.
func TestScenarioReclaimNeverStrandsWaiter(t *testing.T) {
	gold, spot, _, _ := reclaimers(t)
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	require.Equal(t, "4", capOf(spot, "s1"))
	gold.w.take()
	require.NoError(t, gold.l.SetCohortTerms(nil, nil, ledger.ReclaimNever))
	// Its waiter is woken to be decided again: asking, it finds nothing
	// may be taken back, and no cap is left.
	assert.Contains(t, gold.w.take(), "g1", "the cap made for gold's waiter no longer holds: it is decided again")
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	assert.Equal(t, "", capOf(spot, "s1"), "Never takes nothing back: no cap is left")
	gold.w.take()
	holdIn(spot, "s1", cpu("4"))
	assert.Equal(t, []string{"g1"}, gold.w.take(), "gold's waiter fits now and must be woken")
}

// TestScenarioBorrowerPreemptionSwitch is scenario 7: spot's own
// withinBudget switch (Preemption) says nothing about what its cohort
// takes back: gold's cap on spot stays.
func TestScenarioBorrowerPreemptionSwitch(t *testing.T) {
	gold, spot, _, _ := reclaimers(t)
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	require.Equal(t, "4", capOf(spot, "s1"))
	gold.w.take()
	spot.l.SetPreemption(true)
	spot.l.SetPreemption(false)
	// Today's switch lifts the cap; gold's waiter is woken, and asking
	// again it takes back what it lacks: the cap is an output of the
	// decision, not of the borrower's switch.
	assert.Contains(t, gold.w.take(), "g1", "gold's waiter is decided again")
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	assert.Equal(t, "4", capOf(spot, "s1"), "the lender's reclaim is not the borrower's to lift")
}

// TestScenarioFreedInOneOrder is scenario 8: capacity freed in a cohort
// goes to the heads of all members' lines in one order (no borrowing
// first, then priority), not member by member. Member a has a class of
// priority 10 but its waiter is of priority 1; member b's waiter is of
// priority 5. Both must borrow; 4 freed go to b's.
func TestScenarioFreedInOneOrder(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	lender := newTier(t, c, "lender", cpu("4"), 0, ledger.Options{})
	a := newTier(t, c, "a", cpu("0"), 1, ledger.Options{})
	require.NoError(t, a.l.Attach("a-high", ledger.Class{Priority: 10}))
	b := newTier(t, c, "b", cpu("0"), 5, ledger.Options{})
	grant(t, lender, ask(lender, "l1", cpu("4")))
	// a's line holds a priority-10 waiter that fits nowhere (it asks more
	// than the cohort has) and a priority-1 one; b's a priority-5 one.
	big := ask(a, "a-big", cpu("8"))
	big.Class, big.Priority = "a-high", 10
	refused(t, []*ledger.Ledger{a.l}, big)
	refused(t, []*ledger.Ledger{a.l}, ask(a, "a1", cpu("4")))
	refused(t, []*ledger.Ledger{b.l}, ask(b, "b1", cpu("4")))
	holdIn(lender, "l1", cpu("0"))
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{b.l}, ask(b, "b1", cpu("4")))
	if refusal != nil {
		t.Errorf("b's priority-5 waiter was refused what was freed: %s", refusal.Message)
	} else {
		b.l.Done(as[0], ledger.Applied)
	}
	as, refusal = ledger.AdmitAll([]*ledger.Ledger{a.l}, ask(a, "a1", cpu("4")))
	if refusal == nil {
		a.l.Done(as[0], ledger.Applied)
	}
	held := cohortHeld(lender, a, b)
	assert.LessOrEqual(t, held.Cmp(resource.MustParse("4")), 0, "the cohort counts %s against its 4", held.String())
}

// TestScenarioWaiterThatFitsStalls is the second end-to-end failure:
// gold (4, takes back from anyone), silver (4), spot (2, may borrow 10)
// holding 10. Silver's total is cut to 0; gold asks 2 and waits. Silver
// is restored to 4: gold holds nothing of its 4, so its 2 fit once spot
// yields what it borrowed beyond the cohort's room, and the decision is
// made without an unrelated edit to wake it.
func TestScenarioWaiterThatFitsStalls(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	gold := newTier(t, c, "gold", cpu("4"), 10, ledger.Options{ReclaimWithinCohort: ledger.ReclaimAny})
	silver := newTier(t, c, "silver", cpu("4"), 5, ledger.Options{})
	spot := newTier(t, c, "spot", cpu("2"), 0, ledger.Options{BorrowingLimit: cpu("10")})
	grant(t, spot, ask(spot, "s1", cpu("10")))
	require.NoError(t, silver.l.SetTotal(cpu("0")))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("2")))
	gold.w.take()
	spot.w.take()
	require.NoError(t, silver.l.SetTotal(cpu("4")))
	// The cohort is 10 again and spot holds all of it: gold's waiter is
	// woken at once; asking again, it takes back the 2 it lacks from
	// spot (priority 0): spot keeps 8, and gold is decided again once
	// spot's slice is observed at 8.
	assert.Contains(t, gold.w.take(), "g1", "gold's waiter fits once spot yields: it is decided again without an unrelated edit")
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("2")))
	assert.Equal(t, "8", capOf(spot, "s1"), "gold takes back the 2 it lacks from spot")
	spot.l.ObserveSlice(slice("s1", strconv.FormatInt(rvs.Add(1)+1, 10), cpu("8"), inClass("spot"), consumer("c-s1"), reclaimed))
	assert.Contains(t, gold.w.take(), "g1", "gold's waiter fits and must be woken")
}
