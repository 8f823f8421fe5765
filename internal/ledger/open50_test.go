package ledger_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// TestStoppedBorrowerSliceGoneFrees is scenario 2 to its end: spot's
// class stopped while its slice borrows, so its books are kept without a
// feed; when the slice is deleted, a peer's feed tells it, and gold's 10
// fits again.
func TestStoppedBorrowerSliceGoneFrees(t *testing.T) {
	_, gold, spot, _ := tiers(t)
	grant(t, spot, ask(spot, "s1", cpu("14")))
	spot.l.Detach("spot")
	spot.l.ForgetAll()
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	gold.w.take()
	// Gold's feed sees every slice: spot's slice is deleted.
	gold.l.ForgetSlice(key("s1"), uid("s1"))
	assert.Equal(t, "0", cpuOf(spot.l.Used()), "spot's deleted slice still counts")
	assert.Contains(t, gold.w.take(), "g1", "gold's waiter fits once spot's slice is gone and must be woken")
	as := admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	gold.l.Done(as[0], ledger.Applied)
}

func cpuOf(rl corev1.ResourceList) string {
	q := rl[corev1.ResourceCPU]
	return q.String()
}

// TestWaiterThatFitsTakesBack is issue 50's case b: gold (4, takes back
// from anyone), silver (4), spot (2, may borrow 10) holding 10; silver's
// total is cut to 0. Gold asking 2 holds nothing of its 4: spot yields
// down to 4 for it.
func TestWaiterThatFitsTakesBack(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	gold := newTier(t, c, "gold", cpu("4"), 100, ledger.Options{ReclaimWithinCohort: ledger.ReclaimAny})
	silver := newTier(t, c, "silver", cpu("4"), 50, ledger.Options{})
	spot := newTier(t, c, "spot", cpu("2"), 0, ledger.Options{BorrowingLimit: cpu("10")})
	grant(t, spot, ask(spot, "s1", cpu("10")))
	require.NoError(t, silver.l.SetTotal(cpu("0")))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("2")))
	keep := capOf(spot, "s1")
	require.NotEqual(t, "", keep, "spot is not capped for gold's waiter")
	q := cpu(keep)[corev1.ResourceCPU]
	assert.LessOrEqual(t, q.Cmp(cpu("4")[corev1.ResourceCPU]), 0, "spot keeps %s", keep)
	gold.w.take()
	spot.l.ObserveSlice(slice("s1", strconv.FormatInt(rvs.Add(1)+1, 10), cpu(keep), inClass("spot"), consumer("c-s1"), reclaimed))
	assert.Contains(t, gold.w.take(), "g1", "spot yielded: gold's waiter fits and must be woken")
	as := admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("2")))
	gold.l.Done(as[0], ledger.Applied)
}
