package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

func TestAdmitMessage(t *testing.T) {
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, l *ledger.Ledger)
		offer  corev1.ResourceList
		want   string
	}{
		"Short": {
			reason: "The message names the resource, what was asked and how much must be free for it (not what is free now: it moves).",
			setup:  func(_ *testing.T, l *ledger.Ledger) { hold(l, "x", res("3", "0")) },
			offer:  cpu("2"),
			want:   "budget pool: cpu: asked 2, waits until 2 is free",
		},
		"Holds": {
			reason: "A slice that holds some is told so: only the increase must fit.",
			setup: func(_ *testing.T, l *ledger.Ledger) {
				hold(l, "a", cpu("1"))
				hold(l, "x", cpu("3"))
			},
			offer: cpu("3"),
			want:  "budget pool: cpu: asked 3, holds 1, waits until 2 more is free",
		},
		"SeveralResources": {
			reason: "Every short resource is named, sorted.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { hold(l, "x", res("4", "1Gi")) },
			offer:  res("1", "2Gi"),
			want:   "budget pool: cpu: asked 1, waits until 1 is free; memory: asked 2Gi, waits until 2Gi is free",
		},
		"TotalShrunk": {
			reason: "A total below what is held says nothing more: the ask is within the total.",
			setup: func(t *testing.T, l *ledger.Ledger) {
				hold(l, "x", cpu("3"))
				require.NoError(t, l.SetTotal(res("2", "2Gi")))
			},
			offer: cpu("1"),
			want:  "budget pool: cpu: asked 1, waits until 1 is free",
		},
		"Promised": {
			reason: "Free capacity promised to an older waiter is not available to a younger slice; its message is the one for capacity in use, so that promises made and kept rewrite no waiter.",
			setup: func(t *testing.T, l *ledger.Ledger) {
				hold(l, "x", cpu("4"))
				wait(t, l, gold("old"), at(0), cpu("3"))
				l.ForgetSlice(key("x"), "")
			},
			offer: cpu("2"),
			want:  "budget pool: cpu: asked 2, waits until 2 is free",
		},
		"Fits": {
			reason: "An offer that fits is admitted with no message.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { hold(l, "x", cpu("3")) },
			offer:  cpu("1"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := newLedger(t, res("4", "2Gi"))
			tc.setup(t, l)
			a, msg := l.Admit(gold("a"), "1", at(5), tc.offer)
			assert.Equal(t, tc.want, msg, tc.reason)
			assert.Equal(t, tc.want == "", a != nil, "admitted: %s", tc.reason)
			assert.Equal(t, tc.want != "", l.Waiting() != nil && l.Waiting()[len(l.Waiting())-1] == gold("a"),
				"in line: %s", tc.reason)
		})
	}
}

func TestWaitingOrder(t *testing.T) {
	l, _ := newLedger(t, cpu("1"))
	require.NoError(t, l.Attach("silver", ledger.Class{}))
	hold(l, "x", cpu("1"))
	other := ledger.Holder{Class: "gold", Key: types.NamespacedName{Namespace: "a-ns", Name: "z"}}
	wait(t, l, gold("late"), at(9), cpu("1"))
	wait(t, l, silver("b"), at(1), cpu("1"))
	wait(t, l, gold("b"), at(1), cpu("1"))
	wait(t, l, gold("a"), at(1), cpu("1"))
	wait(t, l, other, at(1), cpu("1"))
	wait(t, l, gold("first"), at(0), cpu("1"))
	want := []string{
		"gold/ns/first",            // oldest
		"gold/a-ns/z",              // same time: by namespace,
		"gold/ns/a",                // then name,
		"gold/ns/b", "silver/ns/b", // then class
		"gold/ns/late",
	}
	assert.Empty(t, cmp.Diff(want, names(l.Waiting())), "line order (-want +got)")

	wait(t, l, gold("late"), t0.Add(-time.Second), cpu("1"))
	assert.Equal(t, "gold/ns/late", names(l.Waiting())[0], "a rejoin with another creation time moves in line")
	wait(t, l, gold("late"), t0.Add(-time.Second), cpu("1"))
	assert.Len(t, l.Waiting(), 6, "a rejoin does not add a second place")
}

// TestWake: capacity freed is promised to waiters that fit, in line order,
// skipping the ones that do not, and their class wakes them.
func TestWake(t *testing.T) {
	l, w := newLedger(t, cpu("6"))
	hold(l, "x", cpu("6"))
	wait(t, l, gold("b"), at(1), cpu("5"))
	wait(t, l, gold("c"), at(2), cpu("2"))
	wait(t, l, gold("d"), at(3), cpu("1"))
	wait(t, l, gold("e"), at(4), cpu("1"))
	assert.Empty(t, w.take(), "nothing freed, nobody woken")

	l.ForgetSlice(key("x"), "")
	assert.Equal(t, []string{"b", "d"}, w.take(), "b (5) then d (1) fit 6; c (2) does not fit the 1 left, nothing is left for e")
	assert.Len(t, l.Waiting(), 4, "woken waiters keep their place until admitted")

	admit(t, l, gold("d"), "1", at(3), cpu("1"))
	ok, msg := l.Check(gold("e"), cpu("1"))
	assert.False(t, ok, "the rest is b's")
	assert.Equal(t, "budget pool: cpu: asked 1, waits until 1 is free", msg, "promised to b: not free for e")
	admit(t, l, gold("b"), "1", at(1), cpu("5"))
	assert.Equal(t, []string{"gold/ns/c", "gold/ns/e"}, names(l.Waiting()), "admitted waiters left the line")
	assertList(t, cpu("6"), l.Used(), "Used")
}

func TestWakeTriggers(t *testing.T) {
	cases := map[string]struct {
		reason string
		free   func(t *testing.T, l *ledger.Ledger)
		want   []string
	}{
		"ForgetSlice": {
			reason: "A deletion frees what the slice held.",
			free:   func(_ *testing.T, l *ledger.Ledger) { l.ForgetSlice(key("x"), "") },
			want:   []string{"b"},
		},
		"SmallerGrant": {
			reason: "An acceptance of less frees the difference.",
			free:   func(_ *testing.T, l *ledger.Ledger) { l.ObserveSlice(slice("x", "2", cpu("2"))) },
			want:   []string{"b"},
		},
		"SetTotalGrows": {
			reason: "A larger total frees capacity.",
			free:   func(t *testing.T, l *ledger.Ledger) { require.NoError(t, l.SetTotal(cpu("6"))) },
			want:   []string{"b"},
		},
		"SetTotalGrowsTooLittle": {
			reason: "A waiter is woken only when what it asks fits.",
			free:   func(t *testing.T, l *ledger.Ledger) { require.NoError(t, l.SetTotal(cpu("5"))) },
		},
		"SameGrant": {
			reason: "An observation that frees nothing wakes nobody.",
			free:   func(_ *testing.T, l *ledger.Ledger) { l.ObserveSlice(slice("x", "2", cpu("4"))) },
		},
		"DenyFreesNothing": {
			reason: "A Deny is not a release.",
			free:   func(_ *testing.T, l *ledger.Ledger) { l.ObserveSlice(slice("x", "2", nil)) },
		},
		"QuotaGone": {
			reason: "A Quota larger than the grant holds capacity until it is gone.",
			free: func(t *testing.T, l *ledger.Ledger) {
				l.ObserveQuota(key("x"), uid("x"), "q", "", cpu("4"))
				l.ObserveSlice(slice("x", "2", cpu("2")))
				assertList(t, cpu("4"), l.Used(), "the Quota still enforces 4")
				l.ForgetQuota(key("x"), "q")
			},
			want: []string{"b"},
		},
		"DetachFreesNothing": {
			reason: "Detaching the class of a slice in use frees nothing.",
			free: func(t *testing.T, l *ledger.Ledger) {
				require.NoError(t, l.Attach("silver", ledger.Class{}))
				l.ObserveSlice(slice("x", "2", cpu("4"), inClass("silver")))
				l.Detach("silver")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, w := newLedger(t, cpu("4"))
			hold(l, "x", cpu("4"))
			wait(t, l, gold("b"), at(1), cpu("2"))
			tc.free(t, l)
			assert.Equal(t, tc.want, w.take(), tc.reason)
		})
	}
}

// TestLeaveReleasesPromise: a waiter whose handler then fails leaves the
// line and must not keep capacity from younger slices.
func TestLeaveReleasesPromise(t *testing.T) {
	l, w := newLedger(t, cpu("4"))
	hold(l, "x", cpu("4"))
	wait(t, l, gold("old"), at(0), cpu("4"))
	wait(t, l, gold("young"), at(1), cpu("4"))
	l.ForgetSlice(key("x"), "")
	require.Equal(t, []string{"old"}, w.take())
	_, msg := l.Admit(gold("young"), "1", at(1), cpu("4"))
	require.Equal(t, "budget pool: cpu: asked 4, waits until 4 is free", msg, "promised to old: not free for young")

	l.Leave(gold("old"))
	assert.Equal(t, []string{"young"}, w.take(), "the released promise goes to the next in line")
	assert.Equal(t, []string{"gold/ns/young"}, names(l.Waiting()))
	admit(t, l, gold("young"), "1", at(1), cpu("4"))
	assert.Empty(t, l.Waiting())

	l.Leave(gold("old"))
	assert.Empty(t, w.take(), "leaving twice wakes nobody")
}

func TestLeaveUnpromisedWakesNobody(t *testing.T) {
	l, w := newLedger(t, cpu("4"))
	hold(l, "x", cpu("4"))
	wait(t, l, gold("a"), at(0), cpu("4"))
	wait(t, l, gold("b"), at(1), cpu("1"))
	l.Leave(gold("a"))
	assert.Empty(t, w.take(), "nothing was set aside for a")
	assert.Equal(t, []string{"gold/ns/b"}, names(l.Waiting()))
}

func TestForgetPromisedWaiter(t *testing.T) {
	l, w := newLedger(t, cpu("4"))
	hold(l, "x", cpu("4"))
	wait(t, l, gold("a"), at(0), cpu("3"))
	wait(t, l, gold("b"), at(1), cpu("3"))
	l.ForgetSlice(key("x"), "")
	require.Equal(t, []string{"a"}, w.take())
	l.ForgetSlice(key("a"), "")
	assert.Equal(t, []string{"b"}, w.take(), "a deleted waiter's promise goes to the next")
	assert.Equal(t, []string{"gold/ns/b"}, names(l.Waiting()))
}

func TestDetachReleasesClassWaiters(t *testing.T) {
	l, gw := newLedger(t, cpu("4"))
	sw := &wakes{}
	require.NoError(t, l.Attach("silver", ledger.Class{Wake: sw.wake}))
	hold(l, "x", cpu("4"))
	wait(t, l, silver("s"), at(0), cpu("2"))
	wait(t, l, gold("g"), at(1), cpu("2"))
	l.ObserveSlice(slice("x", "2", cpu("2")))
	require.Equal(t, []string{"s"}, sw.take(), "the older silver waiter gets the 2 freed")
	require.Empty(t, gw.take())

	l.Detach("silver")
	assert.Equal(t, []string{"g"}, gw.take(), "silver's promise goes to gold's waiter")
	assert.Equal(t, []string{"gold/ns/g"}, names(l.Waiting()))
	assert.Empty(t, sw.take(), "a detached class is woken no more")
}

// TestAdmitLessThanPromised: a promised waiter whose handler then asks for
// less takes only that; the rest of its promise is free again and must go
// to the next waiter that fits.
func TestAdmitLessThanPromised(t *testing.T) {
	l, w := newLedger(t, cpu("4"))
	hold(l, "x", cpu("4"))
	wait(t, l, gold("b"), at(0), cpu("4"))
	wait(t, l, gold("c"), at(1), cpu("3"))
	l.ForgetSlice(key("x"), "")
	require.Equal(t, []string{"b"}, w.take())

	admit(t, l, gold("b"), "1", at(0), cpu("1"))
	assert.Equal(t, []string{"c"}, w.take(), "the 3 b did not take fit c")
}

// BenchmarkAdmitWithWaiters measures one Admit with W slices waiting (none
// of which fits): it must cost O(log W).
func BenchmarkAdmitWithWaiters(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		setup := func(b *testing.B) *ledger.Ledger {
			l, _ := newLedger(b, res("100000", "1Gi"))
			for i := range n {
				h := ledger.Holder{Class: "gold", Key: key(fmt.Sprintf("w%d", i))}
				if a, _ := l.Admit(h, "1", at(i), res("1", "2Gi")); a != nil {
					b.Fatal("a waiter fits")
				}
			}
			return l
		}
		b.Run(fmt.Sprintf("waiters=%d/fits", n), func(b *testing.B) {
			l := setup(b)
			keys := make([]ledger.Holder, b.N)
			for i := range keys {
				keys[i] = gold(fmt.Sprintf("s%d", i))
			}
			offer := cpu("1m")
			b.ResetTimer()
			for i := range b.N {
				if a, _ := l.Admit(keys[i], "1", at(-1), offer); a == nil {
					b.Fatal("a small slice must fit")
				}
			}
		})
		b.Run(fmt.Sprintf("waiters=%d/joins", n), func(b *testing.B) {
			// Each op: a new slice joins the line, then leaves it.
			l := setup(b)
			offer := res("1", "2Gi")
			b.ResetTimer()
			for i := range b.N {
				h := gold("joiner")
				if a, _ := l.Admit(h, "1", at(i%(2*n)), offer); a != nil {
					b.Fatal("must wait")
				}
				l.Leave(h)
			}
		})
		b.Run(fmt.Sprintf("waiters=%d/rejoins", n), func(b *testing.B) {
			l := setup(b)
			h := gold(fmt.Sprintf("w%d", n/2))
			offer := res("1", "2Gi")
			b.ResetTimer()
			for range b.N {
				if a, _ := l.Admit(h, "1", at(n/2), offer); a != nil {
					b.Fatal("must wait")
				}
			}
		})
	}
}

// The line remembers what is promised per consumer only while a waiter of
// that consumer holds a promise: the consumer's entry goes with its last
// promise, whether the waiter is admitted, deleted or asks for more than
// was set aside, so consumers that come and go leave nothing behind.
func TestPromisesForgetTheirConsumers(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	ls := []*ledger.Ledger{l}
	hold(l, "x", cpu("4"))
	for i, c := range []string{"admitted", "deleted", "grown"} {
		refused(t, ls, request(c, c, at(i), cpu("1")))
	}
	refused(t, ls, request("admitted-2", "admitted", at(3), cpu("1")))
	l.ForgetSlice(key("x"), "")
	require.Equal(t, 3, l.PromisedConsumers(), "four waiters of three consumers are promised what x freed")

	admitted(t, ls, request("admitted", "admitted", at(0), cpu("1")))
	assert.Equal(t, 3, l.PromisedConsumers(), "consumer admitted still has a promised waiter")
	admitted(t, ls, request("admitted-2", "admitted", at(3), cpu("1")))
	assert.Equal(t, 2, l.PromisedConsumers(), "consumer admitted's last promise was taken")

	l.ForgetSlice(key("deleted"), uid("deleted"))
	assert.Equal(t, 1, l.PromisedConsumers(), "a deleted waiter's promise goes, and its consumer's entry with it")

	refused(t, ls, request("grown", "grown", at(2), cpu("10")))
	assert.Equal(t, 0, l.PromisedConsumers(), "a waiter that outgrew its promise lost it: its consumer has none left")
	assert.Equal(t, []string{"gold/ns/grown"}, names(l.Waiting()), "it still waits")

	// What is promised per consumer still reads right after the entries
	// went: a new promise to consumer grown counts from zero.
	l.ForgetSlice(key("admitted"), uid("admitted"))
	l.ForgetSlice(key("admitted-2"), uid("admitted-2"))
	hold(l, "y", cpu("3"))
	refused(t, ls, request("grown", "grown", at(2), cpu("2")))
	l.ForgetSlice(key("y"), "")
	assert.Equal(t, 1, l.PromisedConsumers(), "grown is promised 2 of the 4 free")
	admitted(t, ls, request("grown", "grown", at(2), cpu("2")))
	assert.Equal(t, 0, l.PromisedConsumers())
}
