package ledger_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// The scenarios on live books: after each step where today's
// ledger keeps a stale cap or promise (see snapshot_scenarios_test.go on
// the core-wip branch), the decision taken on a snapshot of the same
// books (PlanNow: frame.go, then decide.go) is the right one.

// TestFrameScenarioPauses is scenarios 1 and 2: a member whose books are
// not counted pauses its domain; a stopped borrower's slices still count.
func TestFrameScenarioPauses(t *testing.T) {
	_, gold, spot, _ := tiers(t)
	grant(t, spot, ask(spot, "s1", cpu("14")))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	spot.l.Detach("spot")
	d, caps := gold.l.PlanNow()
	assert.Equal(t, "wait:"+ledger.ReasonExhausted, d["g1"], "spot's stopped slice still holds 14")
	assert.Empty(t, caps)
	spot.l.ForgetAll() // its feed is released with its last class
	d, _ = gold.l.PlanNow()
	assert.Equal(t, "wait:"+ledger.ReasonExhausted, d["g1"], "a stopped member's books are kept: its slice still holds 14")
	// Served again, its books are counted anew: until its new feed has
	// counted them, the domain decides nothing.
	require.NoError(t, spot.l.Attach("spot", ledger.Class{}))
	d, _ = gold.l.PlanNow()
	assert.Equal(t, "wait:"+ledger.ReasonNotCounted, d["g1"], "spot's books are being counted again: the domain decides nothing")
	r := refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	assert.Equal(t, ledger.ReasonNotCounted, r.Reason)
	spot.l.Counted(spot.l.Epoch())
	holdIn(spot, "s1", cpu("14"))
	d, _ = gold.l.PlanNow()
	assert.Equal(t, "wait:"+ledger.ReasonExhausted, d["g1"])
}

// TestFrameScenarioCapsRecomputed is scenarios 4 to 7: the cap on spot is
// an output of each cycle, so a deleted waiter, a lender that left, a
// Never policy or the borrower's own preemption switch leave nothing
// stale.
func TestFrameScenarioCapsRecomputed(t *testing.T) {
	t.Run("DeletedWaiter", func(t *testing.T) {
		gold, spot, _, _ := reclaimers(t)
		refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
		d, caps := spot.l.PlanNow()
		require.Equal(t, "reclaiming", d["g1"])
		require.Equal(t, map[string]string{"s1": "4"}, caps)
		gold.l.ForgetSlice(key("g1"), uid("g1"))
		_, caps = spot.l.PlanNow()
		assert.Empty(t, caps)
	})
	t.Run("LenderLeft", func(t *testing.T) {
		gold, spot, _, _ := reclaimers(t)
		refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
		spot.l.ObserveSlice(slice("s1", strconv.FormatInt(rvs.Add(1)+1, 10), cpu("4"), inClass("spot"), consumer("c-s1"), reclaimed))
		gold.l.JoinCohort(nil)
		require.Equal(t, "", gold.l.Cohort())
		d, _ := gold.l.PlanNow()
		assert.Equal(t, "admit", d["g1"], "alone, gold's 10 are free")
		_, caps := spot.l.PlanNow()
		assert.Empty(t, caps)
	})
	t.Run("Never", func(t *testing.T) {
		gold, spot, _, _ := reclaimers(t)
		refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
		require.NoError(t, gold.l.SetCohortTerms(nil, nil, ledger.ReclaimNever))
		d, caps := spot.l.PlanNow()
		assert.Empty(t, caps)
		assert.Equal(t, "wait:"+ledger.ReasonExhausted, d["g1"])
		holdIn(spot, "s1", cpu("4"))
		d, _ = spot.l.PlanNow()
		assert.Equal(t, "admit", d["g1"])
	})
	t.Run("BorrowerPreemptionSwitch", func(t *testing.T) {
		gold, spot, _, _ := reclaimers(t)
		refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
		spot.l.SetPreemption(true)
		spot.l.SetPreemption(false)
		_, caps := spot.l.PlanNow()
		assert.Equal(t, map[string]string{"s1": "4"}, caps)
	})
}

// TestFrameScenarioOneOrder is scenario 8 on live lines.
func TestFrameScenarioOneOrder(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	lender := newTier(t, c, "lender", cpu("4"), 0, ledger.Options{})
	a := newTier(t, c, "a", cpu("0"), 1, ledger.Options{})
	require.NoError(t, a.l.Attach("a-high", ledger.Class{Priority: 10}))
	b := newTier(t, c, "b", cpu("0"), 5, ledger.Options{})
	grant(t, lender, ask(lender, "l1", cpu("4")))
	big := ask(a, "a-big", cpu("8"))
	big.Class, big.Priority = "a-high", 10
	refused(t, []*ledger.Ledger{a.l}, big)
	refused(t, []*ledger.Ledger{a.l}, ask(a, "a1", cpu("4")))
	refused(t, []*ledger.Ledger{b.l}, ask(b, "b1", cpu("4")))
	holdIn(lender, "l1", cpu("0"))
	d, _ := lender.l.PlanNow()
	assert.Equal(t, map[string]string{"a-big": "wait:" + ledger.ReasonExhausted, "a1": "wait:" + ledger.ReasonExhausted, "b1": "admit"}, d)
}

// TestFrameScenarioStall is the stalled waiter: once silver's total is
// back, gold's waiter is decided (it reclaims the 2 it lacks from spot)
// without an unrelated edit.
func TestFrameScenarioStall(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	gold := newTier(t, c, "gold", cpu("4"), 10, ledger.Options{ReclaimWithinCohort: ledger.ReclaimAny})
	silver := newTier(t, c, "silver", cpu("4"), 5, ledger.Options{})
	spot := newTier(t, c, "spot", cpu("2"), 0, ledger.Options{BorrowingLimit: cpu("10")})
	grant(t, spot, ask(spot, "s1", cpu("10")))
	require.NoError(t, silver.l.SetTotal(cpu("0")))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("2")))
	require.NoError(t, silver.l.SetTotal(cpu("4")))
	d, caps := gold.l.PlanNow()
	assert.Equal(t, "reclaiming", d["g1"])
	assert.Equal(t, map[string]string{"s1": "8"}, caps)
}
