package ledger_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Reclaim only for a waiter that would fit once its victims shrink, under
// every limit it answers to, and no more than it lacks (issue 42, item 1).

// spotFull returns a 16-CPU ledger with preemption, classes spot (0) and
// gold (100), and globex's four spot slices of 4 holding all of it; the
// ledger's options are opts with Preemption set.
func spotFull(t *testing.T, opts ledger.Options) (*ledger.Ledger, *wakes, *wakes) {
	t.Helper()
	opts.Preemption = true
	l, err := ledger.New("pool", cpu("16"), opts)
	require.NoError(t, err)
	spot, gold := &wakes{}, &wakes{}
	require.NoError(t, l.Attach("spot", ledger.Class{Wake: spot.wake, Priority: 0}))
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: gold.wake, Priority: 100}))
	for i := range 4 {
		l.ObserveSlice(slice(spotName(i), "1", cpu("4"), inClass("spot"), consumer("globex"), func(s *ledger.Slice) { s.Created = at(i) }))
	}
	spot.take()
	return l, spot, gold
}

func spotName(i int) string { return fmt.Sprintf("spot-%d", i) }

// acmeGold is acme's gold request for slice name, asking offer.
func acmeGold(name string, offer corev1.ResourceList) ledger.Request {
	return ledger.Request{Holder: gold(name), UID: uid(name), Base: "1", Created: at(10), Consumer: "acme", Offer: offer, Priority: 100}
}

// spotKept is what globex's spot slices keep in all: their caps, or all
// they hold; and how many are capped.
func spotKept(l *ledger.Ledger) (resource.Quantity, int) {
	var kept resource.Quantity
	capped := 0
	for i := range 4 {
		if c, ok := l.Cap(key(spotName(i))); ok {
			kept.Add(c.Keep[corev1.ResourceCPU])
			capped++
			continue
		}
		kept.Add(resource.MustParse("4"))
	}
	return kept, capped
}

// A waiter its consumer's limit keeps out reclaims nothing, whether the
// limit is the consumer's own or the budget's; a waiter within it takes
// exactly what it lacks.
func TestReclaimOnlyForAWaiterWithinItsLimit(t *testing.T) {
	cases := map[string]struct {
		reason string
		opts   ledger.Options
		limit  corev1.ResourceList // acme's own limit (SetConsumerLimit)
	}{
		"ConsumersOwnLimit": {reason: "acme's limit is 4: its slice asking 6 never fits.", limit: cpu("4")},
		"BudgetWideLimit":   {reason: "every consumer's limit is 4.", opts: ledger.Options{ConsumerLimit: cpu("4")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, spotW, goldW := spotFull(t, tc.opts)
			var rec reclaims
			l.SetReclaimHook(rec.hook)
			if tc.limit != nil {
				require.NoError(t, l.SetConsumerLimit("acme", tc.limit))
			}

			r := refused(t, []*ledger.Ledger{l}, acmeGold("big", cpu("6")))
			assert.Equal(t, ledger.ReasonExhausted, r.Reason, tc.reason)
			kept, capped := spotKept(l)
			assert.Equal(t, 0, capped, "no spot slice yields to a waiter its limit keeps out: %s", tc.reason)
			assert.Equal(t, "16", kept.String())
			assert.Empty(t, rec.take(), "no reclaim")
			assert.Empty(t, spotW.take(), "no victim woken")
			assertList(t, cpu("0"), l.Reclaiming(), "nothing being reclaimed")
			assert.NotContains(t, r.Message, "waiting for reclaimed capacity", "it waits for no reclaim")

			// Asked again (a resync), still nothing.
			refused(t, []*ledger.Ledger{l}, acmeGold("big", cpu("6")))
			_, capped = spotKept(l)
			assert.Equal(t, 0, capped)

			// acme's 3-CPU slice fits its limit: it takes exactly the 3 it
			// lacks; spot keeps 13.
			goldW.take()
			refused(t, []*ledger.Ledger{l}, acmeGold("small", cpu("3")))
			kept, capped = spotKept(l)
			assert.Equal(t, "13", kept.String(), "spot keeps all but the 3 acme lacks")
			assert.Equal(t, 1, capped, "the newest spot slice alone yields")
			got := rec.take()
			require.Len(t, got, 1)
			assertList(t, cpu("3"), got[0].Amount, "what it lacked")
			assertList(t, cpu("3"), l.Reclaiming(), "3 being reclaimed")

			// The victim lowers its grant: acme's small slice is woken and
			// admitted; the budget is full again, 13 and 3.
			c, _ := l.Cap(key(spotName(3)))
			l.ObserveSlice(slice(spotName(3), "2", c.Keep, inClass("spot"), consumer("globex"), reclaimed,
				func(s *ledger.Slice) { s.Created = at(3) }))
			assert.Contains(t, goldW.take(), "small")
			admitted(t, []*ledger.Ledger{l}, acmeGold("small", cpu("3")))
			assertList(t, cpu("16"), l.Used(), "13 spot and 3 acme: nothing idle")
			_, capped = spotKept(l)
			assert.Equal(t, 0, capped, "admitted: the cap is lifted")
		})
	}
}

// The consumer limit counts what its other waiters are being reclaimed
// for: two acme slices of 3 under a limit of 4 reclaim for the first only.
func TestReclaimCountsTheConsumersOtherReclaims(t *testing.T) {
	l, _, _ := spotFull(t, ledger.Options{ConsumerLimit: cpu("4")})
	refused(t, []*ledger.Ledger{l}, acmeGold("first", cpu("3")))
	r := acmeGold("second", cpu("3"))
	r.Created = at(11)
	refused(t, []*ledger.Ledger{l}, r)
	kept, _ := spotKept(l)
	assert.Equal(t, "13", kept.String(), "3 for the first; the second would take acme to 6 of 4")
}

// A slice answering to two budgets (a total and a node pool) reclaims in
// neither when one of them would still keep it out once victims shrink.
func TestReclaimOnlyWhenEveryBudgetWouldAdmit(t *testing.T) {
	cases := map[string]struct {
		reason string
		pool   func(t *testing.T) *ledger.Ledger
	}{
		"PoolTooSmall": {reason: "the pool has 4 in all: 6 never fits it.", pool: func(t *testing.T) *ledger.Ledger {
			p, err := ledger.New("nodes", cpu("4"))
			require.NoError(t, err)
			return p
		}},
		"PoolConsumerLimit": {reason: "the pool limits acme to 4.", pool: func(t *testing.T) *ledger.Ledger {
			p, err := ledger.New("nodes", cpu("100"), ledger.Options{ConsumerLimit: cpu("4")})
			require.NoError(t, err)
			return p
		}},
		"PoolFullNoVictims": {reason: "the pool is full of gold and reclaims nothing.", pool: func(t *testing.T) *ledger.Ledger {
			p, err := ledger.New("nodes", cpu("8"), ledger.Options{Preemption: true})
			require.NoError(t, err)
			require.NoError(t, p.Attach("gold", ledger.Class{Priority: 100}))
			p.ObserveSlice(slice("other", "1", cpu("8"), consumer("initech")))
			return p
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _, _ := spotFull(t, ledger.Options{})
			pool := tc.pool(t)
			if pool.Attached() == 0 {
				require.NoError(t, pool.Attach("gold", ledger.Class{Priority: 100}))
			}
			refused(t, []*ledger.Ledger{l, pool}, acmeGold("big", cpu("6")))
			_, capped := spotKept(l)
			assert.Equal(t, 0, capped, tc.reason)
			assertList(t, cpu("0"), l.Reclaiming(), tc.reason)
		})
	}

	// A pool that would admit it: the total budget reclaims what it lacks.
	l, _, _ := spotFull(t, ledger.Options{})
	pool, err := ledger.New("nodes", cpu("100"))
	require.NoError(t, err)
	require.NoError(t, pool.Attach("gold", ledger.Class{Priority: 100}))
	refused(t, []*ledger.Ledger{l, pool}, acmeGold("big", cpu("6")))
	kept, _ := spotKept(l)
	assert.Equal(t, "10", kept.String(), "6 reclaimed for a waiter every budget would admit")
}

// What was taken for a waiter goes back to its victims when it leaves or
// can no longer fit: its caps are lifted (or raised by what it no longer
// lacks), and the victims are woken to grow back.
func TestReclaimGivenBackWhenTheWaiterCannotFit(t *testing.T) {
	cases := map[string]struct {
		reason string
		change func(t *testing.T, l *ledger.Ledger)
		// kept is what spot keeps after the change, reclaiming what is
		// still being reclaimed; woken, whether the waiter's class is
		// woken to decide it again; stillFor, whether a victim still
		// yields to the waiter.
		kept, reclaiming string
		woken, stillFor  bool
	}{
		"LimitCut": {reason: "acme's limit cut to 4 keeps its 6 out: all goes back.",
			change: func(t *testing.T, l *ledger.Ledger) { require.NoError(t, l.SetConsumerLimit("acme", cpu("4"))) },
			kept:   "16", woken: true, reclaiming: "0"},
		"BudgetWideLimitCut": {reason: "the budget's consumer limit cut to 4: likewise.",
			change: func(t *testing.T, l *ledger.Ledger) {
				require.NoError(t, l.SetConsumerLimits(cpu("4"), map[string]corev1.ResourceList{"globex": cpu("16")}))
			},
			kept: "16", woken: true, reclaiming: "0"},
		"TotalCut": {reason: "a total of 5 keeps out a slice asking 6: spot yields to the total alone.",
			change: func(t *testing.T, l *ledger.Ledger) { require.NoError(t, l.SetTotal(cpu("5"))) },
			kept:   "5", woken: true, reclaiming: "11"},
		"Deleted": {reason: "the waiter's slice is deleted.",
			change: func(_ *testing.T, l *ledger.Ledger) { l.ForgetSlice(key("big"), uid("big")) },
			kept:   "16", reclaiming: "0"},
		"Left": {reason: "the waiter's decision ended without the budget (a denial).",
			change: func(_ *testing.T, l *ledger.Ledger) { l.Leave(gold("big")) },
			kept:   "16", reclaiming: "0"},
		"Shrunk": {reason: "the waiter now asks 2: it lacks 2, and 4 go back.",
			change: func(t *testing.T, l *ledger.Ledger) { refused(t, []*ledger.Ledger{l}, acmeGold("big", cpu("2"))) },
			kept:   "14", reclaiming: "2", stillFor: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, spotW, goldW := spotFull(t, ledger.Options{})
			refused(t, []*ledger.Ledger{l}, acmeGold("big", cpu("6")))
			kept, capped := spotKept(l)
			require.Equal(t, "10", kept.String(), "6 reclaimed")
			require.Equal(t, 2, capped)
			spotW.take()
			goldW.take()

			tc.change(t, l)
			kept, _ = spotKept(l)
			assert.Equal(t, tc.kept, kept.String(), tc.reason)
			assertList(t, cpu(tc.reclaiming), l.Reclaiming(), tc.reason)
			for i := range 4 {
				if c, ok := l.Cap(key(spotName(i))); ok && !tc.stillFor {
					assert.NotContains(t, c.Message, "for priority", "nothing yields to the waiter any more: %s", tc.reason)
				}
			}
			assert.NotEmpty(t, spotW.take(), "the victims given back are woken to grow back: %s", tc.reason)
			if tc.woken {
				assert.Contains(t, goldW.take(), "big", "the waiter is decided again: %s", tc.reason)
			}
		})
	}
}

// A victim that already released part of what was taken keeps its cap
// while the waiter still lacks it; capacity freed elsewhere meanwhile is
// given back to the victims rather than taken twice.
func TestReclaimGivesBackWhatFreedElsewhere(t *testing.T) {
	l, _, _ := spotFull(t, ledger.Options{})
	refused(t, []*ledger.Ledger{l}, acmeGold("big", cpu("6")))
	kept, _ := spotKept(l)
	require.Equal(t, "10", kept.String())

	// globex's oldest slice, not a victim, ends: 4 free.
	l.ForgetSlice(key(spotName(0)), uid(spotName(0)))
	refused(t, []*ledger.Ledger{l}, acmeGold("big", cpu("6")))
	var yielded resource.Quantity
	for i := 1; i < 4; i++ {
		if c, ok := l.Cap(key(spotName(i))); ok {
			y := resource.MustParse("4")
			y.Sub(c.Keep[corev1.ResourceCPU])
			yielded.Add(y)
		}
	}
	assert.Equal(t, "2", yielded.String(), "4 freed elsewhere: the victims yield only the 2 still lacking")
	assertList(t, cpu("2"), l.Reclaiming(), "2 being reclaimed")
}

// A victim whose pods still use what was taken from it gets it back when
// the waiter leaves or can no longer fit: its growth is measured from what
// it counts again, not from the smaller offer it was left with (nobody
// else can use what its pods hold).
func TestGivenBackVictimRegrowsIntoWhatItsPodsHold(t *testing.T) {
	cases := map[string]struct {
		reason string
		leave  func(t *testing.T, l *ledger.Ledger)
	}{
		"WaiterDeleted": {reason: "gold's slice is deleted.",
			leave: func(_ *testing.T, l *ledger.Ledger) { l.ForgetSlice(key("g1"), uid("g1")) }},
		"LimitCut": {reason: "gold's consumer is limited to 2.",
			leave: func(t *testing.T, l *ledger.Ledger) { require.NoError(t, l.SetConsumerLimit("g", cpu("2"))) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _, _ := priced(t, cpu("10"), true)
			l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("spot")))
			l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("8"))
			l.ObservePod(podKey("p1"), "user-s", cpu("4"), ledger.PodMeta{})
			l.ObservePod(podKey("p2"), "user-s", cpu("4"), ledger.PodMeta{})
			refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
			c, ok := l.Cap(key("s"))
			require.True(t, ok)
			assertList(t, cpu("4"), c.Keep, "spot yields the 4 gold lacks")
			// spot writes what it keeps; Liqo lowers its Quota; its pods
			// still use 8.
			l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("spot"), reclaimed))
			l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("4"))
			spotAgain := ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("s")}, UID: uid("s"), Base: "2", Created: at(1),
				Consumer: "spot", Offer: cpu("8")}
			refused(t, []*ledger.Ledger{l}, spotAgain)

			tc.leave(t, l)
			_, ok = l.Cap(key("s"))
			require.False(t, ok, tc.reason)
			admitted(t, []*ledger.Ledger{l}, spotAgain)
			assertList(t, cpu("8"), l.Used(), "spot's 8, as its pods use")
		})
	}
}
