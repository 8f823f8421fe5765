package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
)

// midReclaim is a new leader's ledger in the middle of a reclaim, as its
// feed's initial lists show it: spot (priority 0) Accepted with 4
// (Reclaimed), its pods using 4 and 4; gold's slice g (priority 100)
// Denied, waiting. Then the feed has counted (epoch 0), and one of spot's
// pods ends before either class decided anything.
func midReclaim(t *testing.T) (*ledger.Ledger, *wakes, *wakes) {
	t.Helper()
	l, spotW, goldW := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("spot"), reclaimed))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("4"))
	l.ObservePod(podKey("p1"), "user-s", cpu("4"), ledger.PodMeta{})
	l.ObservePod(podKey("p2"), "user-s", cpu("4"), ledger.PodMeta{})
	l.ObserveSlice(slice("g", "3", nil, consumer("g")))
	l.Counted(l.Epoch())
	l.ForgetPod(podKey("p1"))
	assertList(t, cpu("4"), l.Used(), "spot's one pod left")
	return l, spotW, goldW
}

func spotAsk(offer string) ledger.Request {
	return ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("s")}, UID: uid("s"), Base: "2", Created: at(1),
		Consumer: "spot", Offer: cpu(offer)}
}

// A new leader that decides spot before gold, as one of spot's pods ends,
// does not give spot back the capacity gold was promised: spot waits until
// gold is decided; gold is then admitted from what is free, and spot grows
// into nothing gold needs.
func TestUndecidedHigherPriorityHoldsLowerGrowth(t *testing.T) {
	l, spotW, _ := midReclaim(t)
	r := refused(t, []*ledger.Ledger{l}, spotAsk("8"))
	assert.Equal(t, ledger.ReasonExhausted, r.Reason)
	assert.Contains(t, r.Message, "waits for the slices of priority above 0 to be decided first")
	assert.Equal(t, []string{"cpu"}, r.Resources)
	assert.Empty(t, spotW.take(), "spot's pods outliving its reclaimed grant are no over-grant to wake it for")

	admitted(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
	assertList(t, cpu("10"), l.Used(), "gold's 6 and spot's 4")
	assert.NotContains(t, spotW.take(), "s", "nothing free for spot: not woken")
	r = refused(t, []*ledger.Ledger{l}, spotAsk("8"))
	assert.NotContains(t, r.Message, "decided first", "no longer held back, short of capacity now: %s", r.Message)

	// Asking for no more than it holds is never held back.
	l2, _, _ := midReclaim(t)
	admitted(t, []*ledger.Ledger{l2}, spotAsk("4"))
}

// The hold ends with gold's first decision, whatever it is, and with
// gold's slice or class gone; spot, waiting, is then woken and grows.
func TestUndecidedHoldEndsWhenGoldIsDecided(t *testing.T) {
	cases := map[string]struct {
		reason string
		decide func(*ledger.Ledger)
	}{
		"GoldLeavesTheLine": {"its class ended its decision without reaching the budget (a denial, a failure)",
			func(l *ledger.Ledger) { l.Leave(gold("g")) }},
		"GoldDeleted":        {"a deleted waiter holds nothing back", func(l *ledger.Ledger) { l.ForgetSlice(key("g"), uid("g")) }},
		"GoldNeverComesBack": {"its class stopped being served (Detach)", func(l *ledger.Ledger) { l.Detach("gold") }},
		"GoldAccepted": {"the cluster shows it Accepted",
			func(l *ledger.Ledger) { l.ObserveSlice(slice("g", "4", cpu("0"), consumer("g"))) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, spotW, _ := midReclaim(t)
			refused(t, []*ledger.Ledger{l}, spotAsk("8"))
			spotW.take()
			tc.decide(l)
			assert.Contains(t, spotW.take(), "s", "%s: spot is woken", tc.reason)
			admitted(t, []*ledger.Ledger{l}, spotAsk("8"))
		})
	}
}

// Only slices in the books' initial lists hold others back: one created
// later races as any two decisions do (it may be decided before the feed
// shows it, and must not hold lower priorities back for ever).
func TestSliceCreatedAfterCountingHoldsNothingBack(t *testing.T) {
	l, _, _ := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "1", cpu("2"), inClass("spot"), consumer("spot")))
	l.Counted(l.Epoch())
	l.ObserveSlice(slice("g", "3", nil, consumer("g")))
	admitted(t, []*ledger.Ledger{l}, spotAsk("6"))

	// After the books are forgotten and counted again, it is initial.
	l.ForgetAll()
	l.ObserveSlice(slice("s", "5", cpu("6"), inClass("spot"), consumer("spot")))
	l.ObserveSlice(slice("g", "6", nil, consumer("g")))
	l.Counted(l.Epoch())
	r := refused(t, []*ledger.Ledger{l}, spotAsk("8"))
	assert.Contains(t, r.Message, "decided first")
}

// A waiter capacity is reclaimed for is told which reclaimed resources are
// still in use, though it holds a promise; as the victims' pods end the
// amount falls, and its message, carrying no amount, stays the same.
func TestReclaimingWaiterToldWhatIsStillInUse(t *testing.T) {
	l, _, goldW := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("spot")))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("8"))
	l.ObservePod(podKey("p1"), "user-s", cpu("2"), ledger.PodMeta{})
	l.ObservePod(podKey("p2"), "user-s", cpu("2"), ledger.PodMeta{})
	l.ObservePod(podKey("p3"), "user-s", cpu("4"), ledger.PodMeta{})
	r := refused(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
	require.True(t, strings.HasSuffix(r.Message, "waiting for reclaimed capacity still in use: cpu"), r.Message)
	l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("spot"), reclaimed))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("4"))
	goldW.take()

	told := r.Message
	l.ForgetPod(podKey("p1")) // 2 of the 4 reclaimed still in use
	r = refused(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
	assert.Equal(t, told, r.Message, "the amount still in use fell; what blocks gold did not change in kind")

	l.ForgetPod(podKey("p2")) // none
	require.Eventually(t, func() bool { return contains(goldW.take(), "g") }, testwait.Timeout, 10*time.Millisecond,
		"gold is woken once what was reclaimed for it is no longer in use")
	admitted(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
}
