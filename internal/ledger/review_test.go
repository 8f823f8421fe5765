package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Regressions found in review of the observed ledger: races between the
// reconciler's reads (from the cache's store) and the feed's events (which
// lag it), and lost answers.

// A late deletion of a slice's predecessor does not forget the slice
// created again under its name, which the reconciler saw first.
func TestLateDeleteKeepsTheRecreatedSlice(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	l.ObserveSlice(slice("a", "5", cpu("4")))                            // the feed: the first a, Accepted 4
	l.ObserveSlice(slice("a", "7", nil, withUID("uid-a2")))              // the reconciler reads the second a
	l.Done(admit(t, l, gold("a"), "7", at(0), cpu("4")), ledger.Applied) // and admits it
	l.ObserveSlice(slice("a", "8", cpu("4"), withUID("uid-a2")))         // the write's answer
	l.ForgetSlice(key("a"), uid("a"))                                    // the feed: the first a's deletion, late
	l.ObserveSlice(slice("a", "8", cpu("4"), withUID("uid-a2")))         // the feed: the second a
	b, _ := l.Admit(gold("b"), "9", at(1), cpu("4"))
	assert.Nil(t, b, "the second a holds the 4 CPU")
	assertList(t, cpu("4"), l.Used(), "used")
}

// An admission decided while the slice was being deleted counts nothing
// once the deletion is seen, even when its write's answer is lost.
func TestAdmitAfterTheDeletionLeaksNothing(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	l.ObserveSlice(slice("a", "5", nil))
	l.ForgetSlice(key("a"), uid("a"))
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: gold("a"), UID: uid("a"), Base: "5", Created: at(0), Offer: cpu("4")})
	assert.Nil(t, refusal)
	l.Done(as[0], ledger.Unknown)
	assertList(t, cpu("0"), l.Used(), "a deleted slice holds nothing")
	b, _ := l.Admit(gold("b"), "9", at(1), cpu("4"))
	assert.NotNil(t, b, "b takes the capacity")
}

// A slice created again under the same name keeps its own Quota, seen
// before the slice itself (a watch cut over the deletion and creation).
func TestRecreatedSliceKeepsItsOwnQuota(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	l.ObserveSlice(slice("a", "5", cpu("4")))
	l.ObserveQuota(key("a"), "uid-a2", "q-a2", "", cpu("4"))
	l.ObserveSlice(slice("a", "20", nil, withUID("uid-a2"), denied))
	assertList(t, cpu("4"), l.Used(), "the second a's Quota still enforces 4")
}

// The cache is behind when the ledger has seen a newer version of the same
// slice (its own write's answer, a feed event).
func TestAhead(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	l.ObserveSlice(slice("a", "5", nil))
	a := admit(t, l, gold("a"), "5", at(0), cpu("4"))
	l.Done(a, ledger.Applied)
	l.ObserveSlice(slice("a", "6", cpu("4")))
	assert.True(t, l.Ahead(key("a"), uid("a"), "5"), "a cache at 5 is behind the answer at 6")
	assert.False(t, l.Ahead(key("a"), uid("a"), "6"), "a cache at 6 is not")
	assert.False(t, l.Ahead(key("a"), "uid-other", "5"), "another slice of that name is not")
}

// A write with no answer at all (Lost) is settled as not applied only by a
// read more than InFlightBound after the answer was lost: the server could
// still apply a write in flight until then. One whose error answer came from
// the server (Unknown) is settled by any read that shows the old version.
func TestSettleReadWaitsForWritesStillInFlight(t *testing.T) {
	l, _ := newLedger(t, cpu("8"))
	l.ObserveSlice(slice("a", "5", nil))
	l.ObserveSlice(slice("b", "7", nil))
	lost := admit(t, l, gold("a"), "5", at(0), cpu("4"))
	l.Done(lost, ledger.Lost)
	unknown := admit(t, l, gold("b"), "7", at(0), cpu("4"))
	l.Done(unknown, ledger.Unknown)

	again := l.SettleRead(key("a"), "5", time.Now())
	assert.Greater(t, again, ledger.InFlightBound-time.Second, "read again once the server cannot apply it any more")
	assertList(t, cpu("8"), l.Used(), "the lost write is kept")
	assert.Zero(t, l.SettleRead(key("b"), "7", time.Now()), "nothing left to read for b")
	assertList(t, cpu("4"), l.Used(), "the write the server answered is dropped")
	assert.Zero(t, l.SettleRead(key("a"), "5", time.Now().Add(ledger.InFlightBound+time.Second)), "nothing left to read for a")
	assertList(t, cpu("0"), l.Used(), "dropped after the bound")
}
