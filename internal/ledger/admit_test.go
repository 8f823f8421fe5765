package ledger_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// TestAttempt follows one admission of 4 CPU for slice a, observed at
// resourceVersion 5 holding nothing, from Admit to its settlement.
func TestAttempt(t *testing.T) {
	type want struct {
		used      string
		awaits    bool // AwaitsOwnWrite(a, "5")
		unsettled bool // Unsettled(a, "5")
	}
	cases := map[string]struct {
		reason string
		steps  func(l *ledger.Ledger, a *ledger.Attempt)
		want   want
	}{
		"InFlight": {
			reason: "An attempt counts while its write is in flight.",
			steps:  func(*ledger.Ledger, *ledger.Attempt) {},
			want:   want{used: "4"},
		},
		"NotApplied": {
			reason: "A write the server refused is dropped at once.",
			steps:  func(l *ledger.Ledger, a *ledger.Attempt) { l.Done(a, ledger.NotApplied) },
			want:   want{used: "0"},
		},
		"Applied": {
			reason: "An applied write counts until the watch shows it.",
			steps:  func(l *ledger.Ledger, a *ledger.Attempt) { l.Done(a, ledger.Applied) },
			want:   want{used: "4", awaits: true},
		},
		"AppliedSameRV": {
			reason: "An observation at the base version does not show the write.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Applied)
				l.ObserveSlice(slice("a", "5", nil))
			},
			want: want{used: "4", awaits: true},
		},
		"AppliedThenObserved": {
			reason: "A newer observation settles an applied attempt: the observation is the truth.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Applied)
				l.ObserveSlice(slice("a", "6", cpu("3")))
			},
			want: want{used: "3"},
		},
		"Unknown": {
			reason: "A write whose answer was lost counts until the watch shows whether it was applied.",
			steps:  func(l *ledger.Ledger, a *ledger.Attempt) { l.Done(a, ledger.Unknown) },
			want:   want{used: "4", unsettled: true},
		},
		"UnknownThenObservedNotApplied": {
			reason: "A newer observation showing no acceptance drops an unknown attempt.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Unknown)
				l.ObserveSlice(slice("a", "6", nil))
			},
			want: want{used: "0"},
		},
		"ObservedInFlightThenApplied": {
			reason: "An observation newer than base during the write covers it: Done drops the attempt at once.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.ObserveSlice(slice("a", "6", nil))
				l.Done(a, ledger.Applied)
			},
			want: want{used: "0"},
		},
		"ObservedInFlightThenUnknown": {
			reason: "Likewise for a lost answer.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.ObserveSlice(slice("a", "6", nil))
				l.Done(a, ledger.Unknown)
			},
			want: want{used: "0"},
		},
		"ObservedInFlightStillCounts": {
			reason: "Until Done, the attempt still counts even after a newer observation.",
			steps:  func(l *ledger.Ledger, _ *ledger.Attempt) { l.ObserveSlice(slice("a", "6", nil)) },
			want:   want{used: "4"},
		},
		"ReadAtBase": {
			reason: "The server still at the base version: the lost write was not applied.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Unknown)
				l.SettleRead(key("a"), "5", time.Now())
			},
			want: want{used: "0"},
		},
		"ReadBeforeTheAnswer": {
			reason: "A read that started before the write's answer may have been served before the write was applied: it settles nothing.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				readAt := time.Now()
				time.Sleep(time.Millisecond)
				l.Done(a, ledger.Unknown)
				l.SettleRead(key("a"), "5", readAt)
			},
			want: want{used: "4", unsettled: true},
		},
		"ReadOtherBase": {
			reason: "A read settles only attempts computed from the version it shows.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Unknown)
				l.SettleRead(key("a"), "4", time.Now())
			},
			want: want{used: "4", unsettled: true},
		},
		"ReadKeepsApplied": {
			reason: "A read settles only unanswered writes, not writes the server said it applied.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Applied)
				l.SettleRead(key("a"), "5", time.Now())
			},
			want: want{used: "4", awaits: true},
		},
		"RetryConflicts": {
			reason: "Applied, answer lost, retry from the same base conflicts: the retry's NotApplied must not drop the first attempt.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Unknown)
				a2, msg := l.Admit(gold("a"), "5", at(0), cpu("4"))
				require.NotNil(t, a2, msg)
				l.Done(a2, ledger.NotApplied)
			},
			want: want{used: "4", unsettled: true},
		},
		"ForgetSlice": {
			reason: "A deleted slice's attempts go with it; a late Done changes nothing.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.ForgetSlice(key("a"), "")
				l.Done(a, ledger.Applied)
			},
			want: want{used: "0"},
		},
		"DoneTwice": {
			reason: "Only the first Done counts.",
			steps: func(l *ledger.Ledger, a *ledger.Attempt) {
				l.Done(a, ledger.Applied)
				l.Done(a, ledger.NotApplied)
			},
			want: want{used: "4", awaits: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := newLedger(t, cpu("10"))
			l.ObserveSlice(slice("a", "5", nil))
			a := admit(t, l, gold("a"), "5", at(0), cpu("4"))
			tc.steps(l, a)
			assertList(t, cpu(tc.want.used), l.Used(), tc.reason)
			assert.Equal(t, tc.want.awaits, l.AwaitsOwnWrite(key("a"), "5"), "AwaitsOwnWrite: %s", tc.reason)
			assert.Equal(t, tc.want.unsettled, l.Unsettled(key("a"), "5"), "Unsettled: %s", tc.reason)
		})
	}
}

func TestAdmitCountsIncreaseOnly(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	l.ObserveSlice(slice("a", "5", cpu("2")))
	hold(l, "b", cpu("1"))
	a := admit(t, l, gold("a"), "5", at(0), cpu("3"))
	assertList(t, cpu("4"), l.Used(), "an attempt counts the max of itself and what is observed, not the sum")
	l.Done(a, ledger.Unknown)

	// The answer was lost; the retry asks the same: it needs nothing more.
	admit(t, l, gold("a"), "5", at(0), cpu("3"))
	assertList(t, cpu("4"), l.Used(), "a retry does not count twice")

	require.NoError(t, l.SetTotal(cpu("1")))
	admit(t, l, gold("a"), "5", at(0), cpu("2"))
	assert.Empty(t, l.Waiting(), "asking no more than held fits whatever the total")
}

func TestCheck(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	hold(l, "x", cpu("3"))

	ok, msg := l.Check(gold("a"), cpu("1"))
	assert.True(t, ok)
	assert.Empty(t, msg)
	assertList(t, cpu("3"), l.Used(), "a dry run charges nothing")

	ok, msg = l.Check(gold("a"), cpu("2"))
	assert.False(t, ok)
	assert.Equal(t, "budget pool: cpu: asked 2, waits until 2 is free", msg)
	assert.Empty(t, l.Waiting(), "a dry run does not join the line")

	_, admitMsg := l.Admit(gold("a"), "1", at(0), cpu("2"))
	assert.Equal(t, msg, admitMsg, "Check answers what Admit would")
}

// TestNoLeak plays random sequences of observations, admissions with lost
// answers, stale reads and deletions; once every slice is deleted nothing
// may stay counted.
func TestNoLeak(t *testing.T) {
	outcomes := []ledger.Outcome{ledger.Applied, ledger.NotApplied, ledger.Unknown}
	for seed := range uint64(50) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			l, _ := newLedger(t, cpu("20"))
			const n = 4
			var rv [n]int  // last resourceVersion per slice
			var gen [n]int // generation: a new UID after each deletion
			var open []*ledger.Attempt
			name := func(i int) string { return string(rune('a' + i)) }
			obs := func(i, v int, grant corev1.ResourceList) {
				l.ObserveSlice(slice(name(i), strconv.Itoa(v), grant, withUID(fmt.Sprintf("%s-%d", name(i), gen[i]))))
			}
			for range 200 {
				i := r.IntN(n)
				q := cpu(strconv.Itoa(1 + r.IntN(4)))
				switch r.IntN(7) {
				case 0: // the watch shows a write
					rv[i]++
					var grant corev1.ResourceList
					if r.IntN(2) == 0 {
						grant = q
					}
					obs(i, rv[i], grant)
				case 1: // a stale read from a cache
					obs(i, max(rv[i]-r.IntN(3), 1), q)
				case 2, 3:
					if a, _ := l.Admit(gold(name(i)), strconv.Itoa(rv[i]), at(i), q); a != nil {
						open = append(open, a)
					}
				case 4: // a write ends
					if len(open) > 0 {
						k := r.IntN(len(open))
						l.Done(open[k], outcomes[r.IntN(3)])
						open = append(open[:k], open[k+1:]...)
					}
				case 5:
					l.ObserveQuota(key(name(i)), types.UID(fmt.Sprintf("%s-%d", name(i), gen[i])), "q", "", q)
				case 6:
					l.ForgetSlice(key(name(i)), "")
					gen[i]++
				}
				for _, q := range l.Used() {
					require.GreaterOrEqual(t, q.Sign(), 0, "Used went negative")
				}
			}
			for _, a := range open {
				l.Done(a, outcomes[r.IntN(3)])
			}
			for i := range n {
				l.ForgetSlice(key(name(i)), "")
			}
			assertList(t, cpu("0"), l.Used(), "every slice is deleted")
		})
	}
}

// TestConcurrentAdmissions: goroutines admit, confirm through ObserveSlice
// only, shrink and delete their slices; the budget never counts more than
// its total.
func TestConcurrentAdmissions(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	total := resource.MustParse("10")
	var over atomic.Int64
	check := func() {
		if u := l.Used()[corev1.ResourceCPU]; u.Cmp(total) > 0 {
			over.Add(1)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				check()
			}
		}
	}()
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			rv, gen, held := 1, 0, 0
			name := fmt.Sprintf("s%d", g)
			obs := func(grant corev1.ResourceList) {
				rv++
				l.ObserveSlice(slice(name, strconv.Itoa(rv), grant, withUID(fmt.Sprintf("%s-%d", name, gen))))
			}
			for range 300 {
				offer := cpu(strconv.Itoa(1 + r.IntN(4)))
				switch r.IntN(4) {
				case 0, 1:
					a, _ := l.Admit(gold(name), strconv.Itoa(rv), at(g), offer)
					if a == nil {
						l.Leave(gold(name))
						continue
					}
					if r.IntN(3) == 0 { // lost answer, then the watch shows the write
						l.Done(a, ledger.Unknown)
					} else {
						l.Done(a, ledger.Applied)
					}
					obs(offer)
					held = int(offer.Cpu().Value())
				case 2: // accepted for less
					if held > 1 {
						obs(cpu("1"))
						held = 1
					}
				case 3:
					l.ForgetSlice(key(name), "")
					gen, held = gen+1, 0
				}
				check()
			}
		})
	}
	wg.Wait()
	close(stop)
	assert.Zero(t, over.Load(), "Used exceeded Total")
	for g := range 8 {
		l.ForgetSlice(key(fmt.Sprintf("s%d", g)), "")
	}
	assertList(t, cpu("0"), l.Used(), "every slice is deleted")
}

// TestAttemptFromStaleBase: a reconciler whose cache lags the feed admits
// from base 5 while the ledger already observed 7. A write from 5 with
// optimistic locking cannot be applied over 7, so when its answer is lost
// the observation at 7 already settles it, as one arriving in flight would.
func TestAttemptFromStaleBase(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	l.ObserveSlice(slice("a", "7", nil))
	a := admit(t, l, gold("a"), "5", at(0), cpu("4"))
	assertList(t, cpu("4"), l.Used(), "in flight, it counts")
	l.Done(a, ledger.Unknown)
	assertList(t, cpu("0"), l.Used(), "the observation at 7 shows the write was not applied")
	assert.False(t, l.Unsettled(key("a"), "5"))
}
