package ledger_test

import (
	"time"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// priced returns a ledger of total with classes spot (priority 0) and gold
// (priority 100) attached, and what each class's Wake receives.
func priced(t *testing.T, total corev1.ResourceList, preemption bool) (*ledger.Ledger, *wakes, *wakes) {
	t.Helper()
	l, err := ledger.New("pool", total, ledger.Options{Preemption: preemption})
	require.NoError(t, err)
	spot, gold := &wakes{}, &wakes{}
	require.NoError(t, l.Attach("spot", ledger.Class{Wake: spot.wake, Priority: 0}))
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: gold.wake, Priority: 100}))
	return l, spot, gold
}

func goldAsk(name string, offer corev1.ResourceList) ledger.Request {
	return ledger.Request{Holder: gold(name), UID: uid(name), Base: "1", Created: at(9), Consumer: "g", Offer: offer, Priority: 100}
}

// spot holds 8 of 10; gold asks 6: spot is shrunk by what gold lacks (4),
// the capacity is promised to gold, and gold is admitted once spot holds
// 4; then spot's cap is lifted.
func TestReclaimPartialForHigherPriority(t *testing.T) {
	l, spotW, goldW := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("c")))
	r := refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	assert.Equal(t, ledger.ReasonExhausted, r.Reason)
	assert.Equal(t, "budget pool: cpu: asked 6, waits until 6 is free; waiting for reclaimed capacity still in use: cpu", r.Message)
	c, ok := l.Cap(key("s"))
	require.True(t, ok, "spot's slice yields")
	assertList(t, cpu("4"), c.Keep, "shrunk by what gold lacks, no more")
	assert.Equal(t, "budget pool reclaimed cpu 8 to 4 for priority 100", c.Message)
	assert.Equal(t, []string{"s"}, spotW.take(), "the victim is woken to write its smaller offer")

	// Asking again while spot still holds 8 shrinks no one twice.
	refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	c, _ = l.Cap(key("s"))
	assertList(t, cpu("4"), c.Keep, "not shrunk twice")

	// spot's smaller grant is observed (its Quota and pods follow): gold is
	// woken and admitted; the cap goes.
	goldW.take()
	l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("c")))
	assert.Contains(t, goldW.take(), "g1")
	admitted(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	_, ok = l.Cap(key("s"))
	assert.False(t, ok, "admitted: the victim's cap is lifted")
	assertList(t, cpu("10"), l.Used(), "4 and 6")
}

// No victim when nothing is of lower priority, when preemption is off, or
// when the waiter would not fit even with all lower priorities hold.
func TestReclaimOnlyWhenItHelps(t *testing.T) {
	cases := map[string]struct {
		preemption bool
		class      string
		ask        corev1.ResourceList
	}{
		"EqualPriority":  {preemption: true, class: "gold", ask: cpu("6")},
		"NoPreemption":   {preemption: false, class: "spot", ask: cpu("6")},
		"WouldNotFitAll": {preemption: true, class: "spot", ask: cpu("11")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _, _ := priced(t, cpu("10"), tc.preemption)
			l.ObserveSlice(slice("s", "1", cpu("8"), inClass(tc.class), consumer("c")))
			refused(t, []*ledger.Ledger{l}, goldAsk("g1", tc.ask))
			_, ok := l.Cap(key("s"))
			assert.False(t, ok, "no victim")
		})
	}
}

// Victims: the consumer holding the largest share first, then the newest
// slice; each shrunk by at most what is still lacking.
func TestReclaimVictimOrder(t *testing.T) {
	l, _, _ := priced(t, cpu("12"), true)
	l.ObserveSlice(slice("small-old", "1", cpu("2"), inClass("spot"), consumer("few"), func(s *ledger.Slice) { s.Created = at(1) }))
	l.ObserveSlice(slice("big-old", "1", cpu("4"), inClass("spot"), consumer("many"), func(s *ledger.Slice) { s.Created = at(1) }))
	l.ObserveSlice(slice("big-new", "1", cpu("4"), inClass("spot"), consumer("many"), func(s *ledger.Slice) { s.Created = at(2) }))
	refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("7"))) // 2 free: 5 lacking
	c, ok := l.Cap(key("big-new"))
	require.True(t, ok)
	assertList(t, cpu("0"), c.Keep, "the largest consumer's newest slice yields all first")
	c, ok = l.Cap(key("big-old"))
	require.True(t, ok)
	assertList(t, cpu("3"), c.Keep, "then its older one, by what is still lacking")
	_, ok = l.Cap(key("small-old"))
	assert.False(t, ok, "the smaller consumer is not touched")
}

// Reclaimed capacity is promised to the waiter: a spot slice asking
// meanwhile does not take it.
func TestReclaimedCapacityIsPromised(t *testing.T) {
	l, _, _ := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("c")))
	refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("c")))
	r := refused(t, []*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("s2")}, UID: uid("s2"),
		Base: "1", Created: at(10), Consumer: "d", Offer: cpu("2")})
	assert.Equal(t, ledger.ReasonExhausted, r.Reason, "the freed 6 are gold's")
}

// SetConsumerLimit below what a consumer holds shrinks its slices, newest
// first, by what it holds beyond the limit, and keeps a growth of theirs
// within it; removing the override lifts the caps.
func TestSetConsumerLimitTakesBack(t *testing.T) {
	l, spotW, _ := priced(t, cpu("20"), false)
	l.ObserveSlice(slice("old", "1", cpu("4"), inClass("spot"), consumer("globex"), func(s *ledger.Slice) { s.Created = at(1) }))
	l.ObserveSlice(slice("new", "1", cpu("4"), inClass("spot"), consumer("globex"), func(s *ledger.Slice) { s.Created = at(2) }))
	l.ObserveSlice(slice("acme", "1", cpu("4"), inClass("spot"), consumer("acme")))
	require.NoError(t, l.SetConsumerLimit("globex", cpu("2")))
	c, ok := l.Cap(key("new"))
	require.True(t, ok)
	assertList(t, cpu("0"), c.Keep, "the newest yields first")
	assert.Equal(t, `budget pool reclaimed cpu 4 to 0 for consumer "globex"'s limit`, c.Message)
	c, ok = l.Cap(key("old"))
	require.True(t, ok)
	assertList(t, cpu("2"), c.Keep, "then the older, by what is still beyond the limit")
	_, ok = l.Cap(key("acme"))
	assert.False(t, ok, "another consumer is not touched")
	assert.ElementsMatch(t, []string{"new", "old"}, spotW.take())

	r := refused(t, []*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("more")}, UID: uid("more"),
		Base: "1", Created: at(3), Consumer: "globex", Offer: cpu("1")})
	assert.Equal(t, ledger.ReasonConsumerLimit, r.Reason)

	// Each victim's class writes what it keeps (reason Reclaimed) while its
	// Quota still shows 4 and a pod uses 2: offering what it keeps again
	// asks nothing more, and is admitted though globex is above its limit.
	reclaimed := func(s *ledger.Slice) { s.Reclaimed = true; s.Created = at(2) }
	l.ObserveSlice(slice("new", "2", cpu("0"), inClass("spot"), consumer("globex"), reclaimed))
	l.ObserveQuota(key("new"), uid("new"), "qn", "user-new", cpu("4"))
	l.ObservePod(podKey("p"), "user-new", cpu("2"), ledger.PodMeta{})
	admitted(t, []*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("new")}, UID: uid("new"),
		Base: "2", Created: at(2), Consumer: "globex", Offer: cpu("0")})
	r = refused(t, []*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("new")}, UID: uid("new"),
		Base: "2", Created: at(2), Consumer: "globex", Offer: cpu("1")})
	assert.Equal(t, ledger.ReasonConsumerLimit, r.Reason, "growing past what it keeps still waits: %s", r.Message)

	require.NoError(t, l.SetConsumerLimit("globex", nil))
	_, ok = l.Cap(key("new"))
	assert.False(t, ok, "the override removed: caps lifted")
	assert.Error(t, l.SetConsumerLimit("globex", cpu("-1")))
}

// A total that falls below what the slices hold shrinks the lowest
// priorities until it fits, with Preemption only; growing it back lifts
// the caps.
func TestShrinkingTotalShrinksLowestPriorities(t *testing.T) {
	for _, preemption := range []bool{true, false} {
		l, _, _ := priced(t, cpu("10"), preemption)
		l.ObserveSlice(slice("s", "1", cpu("6"), inClass("spot"), consumer("a")))
		l.ObserveSlice(slice("g", "1", cpu("4"), inClass("gold"), consumer("b")))
		require.NoError(t, l.SetTotal(cpu("6")))
		c, ok := l.Cap(key("s"))
		_, gold := l.Cap(key("g"))
		assert.False(t, gold, "the higher priority keeps all it holds")
		if !preemption {
			assert.False(t, ok, "without preemption nothing is revoked")
			continue
		}
		require.True(t, ok)
		assertList(t, cpu("2"), c.Keep, "spot shrunk by what the slices hold beyond the new total")
		assert.Equal(t, "budget pool reclaimed cpu 6 to 2: its total fell below what its slices hold", c.Message)
		require.NoError(t, l.SetTotal(cpu("10")))
		_, ok = l.Cap(key("s"))
		assert.False(t, ok, "the total grew back: the cap is lifted")
	}
}

// A new leader's ledger, in the middle of a reclaim: spot was shrunk from 8
// to 4 (its condition says Reclaimed) and its pods still use 8; gold's
// waiting slice has not been decided again yet. spot's handler offers its
// old 8: it is measured from its grant, not from what its pods use, so it
// waits instead of undoing the shrink; gold's reclaim then keeps spot at 4
// (no second shrink), and gold is admitted once spot's pods use 4.
func TestNewLeaderDoesNotUndoAReclaim(t *testing.T) {
	l, _, _ := priced(t, cpu("10"), true)
	reclaimed := func(s *ledger.Slice) { s.Reclaimed = true }
	l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("spot"), reclaimed))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("4"))
	l.ObservePod(podKey("p1"), "user-s", cpu("4"), ledger.PodMeta{})
	l.ObservePod(podKey("p2"), "user-s", cpu("4"), ledger.PodMeta{})
	assertList(t, cpu("8"), l.Used(), "spot's pods use 8")

	spotAgain := ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("s")}, UID: uid("s"), Base: "2", Created: at(1),
		Consumer: "spot", Offer: cpu("8")}
	r := refused(t, []*ledger.Ledger{l}, spotAgain)
	assert.Equal(t, ledger.ReasonExhausted, r.Reason, "the victim's growth waits: %s", r.Message)

	refused(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
	c, ok := l.Cap(key("s"))
	require.True(t, ok, "gold's reclaim caps spot again")
	assertList(t, cpu("4"), c.Keep, "at what it keeps already: no second shrink")

	l.ForgetPod(podKey("p1"))
	admitted(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))

	// Liqo lowers a victim's Quota only after it sees the smaller offer: a
	// new leader may find it still at 8. The Quota lags behind the shrink;
	// it is not room to grow back into either.
	q, _, _ := priced(t, cpu("10"), true)
	q.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("spot"), reclaimed))
	q.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("8"))
	q.ObservePod(podKey("p1"), "user-s", cpu("4"), ledger.PodMeta{})
	q.ObservePod(podKey("p2"), "user-s", cpu("4"), ledger.PodMeta{})
	r = refused(t, []*ledger.Ledger{q}, spotAgain)
	assert.Equal(t, ledger.ReasonExhausted, r.Reason, "a Quota not yet lowered gives the victim nothing back: %s", r.Message)

	// Without the mark, the same offer would be free: its pods' 8 count.
	m, _, _ := priced(t, cpu("10"), true)
	m.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("spot")))
	m.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("4"))
	m.ObservePod(podKey("p1"), "user-s", cpu("4"), ledger.PodMeta{})
	m.ObservePod(podKey("p2"), "user-s", cpu("4"), ledger.PodMeta{})
	admitted(t, []*ledger.Ledger{m}, spotAgain)
}

// A waiter admitted for reclaimed capacity whose write is then not applied
// (a conflict: it decided from a stale cache) keeps its place and its
// victims' caps: spot, shrunk to 4 for gold, is not given its 8 back while
// gold decides again, and gold is then admitted without shrinking spot a
// second time (once seen in a restart: none, 8, 4, 8, 4).
func TestReclaimKeptWhenTheWaitersWriteIsNotApplied(t *testing.T) {
	l, spotW, _ := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("c")))
	refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("c"), reclaimed))
	as := admitted(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	spotW.take()
	l.Done(as[0], ledger.Conflicted)

	c, ok := l.Cap(key("s"))
	require.True(t, ok, "gold's write was not applied: spot still yields to it")
	assertList(t, cpu("4"), c.Keep, "what spot keeps")
	assert.Equal(t, []string{"gold/ns/g1"}, names(l.Waiting()), "gold waits again, in its place")
	spotAsk := ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("s")}, UID: uid("s"), Base: "2", Created: at(1), Consumer: "c", Offer: cpu("4"), Priority: 0}
	l.Done(admitted(t, []*ledger.Ledger{l}, spotAsk)[0], ledger.NotApplied) // capped at what it keeps, as the SDK asks
	spotAsk.Offer = cpu("8")
	assert.Equal(t, ledger.ReasonExhausted, refused(t, []*ledger.Ledger{l}, spotAsk).Reason, "spot's growth does not take gold's capacity")

	as = admitted(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	l.Done(as[0], ledger.Applied)
	_, ok = l.Cap(key("s"))
	assert.False(t, ok, "gold's write applied: the cap is lifted")
	assertList(t, cpu("10"), l.Used(), "4 and 6")
}

// Likewise when the waiter's write had no answer that said whether it was
// applied and one read shows it was not; a write refused for good (an
// invalid status) takes the waiter out, as before.
func TestReclaimKeptWhenAReadShowsTheWriteNotApplied(t *testing.T) {
	for name, tc := range map[string]struct {
		end  func(*ledger.Ledger, *ledger.Attempt)
		kept bool
	}{
		"UnknownReadAtBase": {end: func(l *ledger.Ledger, a *ledger.Attempt) {
			l.Done(a, ledger.Unknown)
			time.Sleep(time.Millisecond)
			l.SettleRead(key("g1"), "1", time.Now())
		}, kept: true},
		"Rejected": {end: func(l *ledger.Ledger, a *ledger.Attempt) { l.Done(a, ledger.NotApplied) }},
	} {
		t.Run(name, func(t *testing.T) {
			l, _, _ := priced(t, cpu("10"), true)
			l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("c")))
			refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
			l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("c"), reclaimed))
			tc.end(l, admitted(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))[0])
			_, capped := l.Cap(key("s"))
			assert.Equal(t, tc.kept, capped, "spot still yields to gold")
			assert.Equal(t, tc.kept, len(l.Waiting()) == 1, "gold waits again")
		})
	}
}
