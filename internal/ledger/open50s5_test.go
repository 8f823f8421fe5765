package ledger_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// TestLenderLeavesMidReclaimToItsEnd is scenario 5 to its end: spot
// (2, may borrow 10) holds 12 and its Quota 12 (its pod), capped to 2
// for gold's 10; gold's policy turns Never and it leaves the cohort, so
// spot's cap is given back. Gold lends nothing while leaving: spot must
// not be granted its 12 again (the leaving lender's capacity would be
// held for ever); once its Quota is down to 2, gold leaves and is
// admitted its 10.
func TestLenderLeavesMidReclaimToItsEnd(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	gold := newTier(t, c, "gold", cpu("10"), 100, ledger.Options{ReclaimWithinCohort: ledger.ReclaimAny})
	spot := newTier(t, c, "spot", cpu("2"), 0, ledger.Options{BorrowingLimit: cpu("10")})
	grant(t, spot, ask(spot, "s1", cpu("12")))
	spot.l.ObserveQuota(key("s1"), uid("s1"), "q", "u", cpu("12"))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	require.Equal(t, "2", capOf(spot, "s1"))
	spot.l.ObserveSlice(slice("s1", strconv.FormatInt(rvs.Add(1)+1, 10), cpu("2"), inClass("spot"), consumer("c-s1"), reclaimed))
	require.NoError(t, gold.l.SetCohortTerms(nil, nil, ""))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	gold.l.JoinCohort(nil)
	assert.Equal(t, "pool", gold.l.Cohort(), "spot still holds what gold lent: gold leaves once it does not")
	as, r := ledger.AdmitAll([]*ledger.Ledger{spot.l}, ask(spot, "s1", cpu("12")))
	if r == nil {
		spot.l.Done(as[0], ledger.Applied)
	}
	require.NotNil(t, r, "spot was granted its 12 back while its lender, leaving, lends nothing")
	gold.w.take()
	spot.l.ObserveQuota(key("s1"), uid("s1"), "q", "u", cpu("2")) // the pod ended
	assert.Equal(t, "", gold.l.Cohort(), "spot holds nothing gold lent: gold has left")
	assert.Contains(t, gold.w.take(), "g1")
	as = admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	gold.l.Done(as[0], ledger.Applied)
}
