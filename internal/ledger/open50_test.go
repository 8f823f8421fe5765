package ledger_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stretchr/testify/assert"

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
