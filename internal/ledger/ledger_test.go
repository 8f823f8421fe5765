package ledger_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// t0 is the creation time of the oldest slice in a test; later slices are
// t0 plus whole seconds, as the API server stamps them.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// cpu is a ResourceList with only cpu.
func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

func gold(name string) ledger.Holder {
	return ledger.Holder{Class: "gold", Key: types.NamespacedName{Namespace: "ns", Name: name}}
}

func silver(name string) ledger.Holder {
	return ledger.Holder{Class: "silver", Key: types.NamespacedName{Namespace: "ns", Name: name}}
}

// byValue compares quantities by value ("1" equals "1000m").
var byValue = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func assertList(t *testing.T, want, got corev1.ResourceList, what string) {
	t.Helper()
	assert.Empty(t, cmp.Diff(want, got, byValue), "%s (-want +got)", what)
}

// wakes records the slices a class's Wake callback received, in order.
type wakes struct {
	mu   sync.Mutex
	keys []string
}

func (w *wakes) wake(k types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, k.Name)
}

func (w *wakes) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.keys
	w.keys = nil
	return out
}

func noSeed() (map[types.NamespacedName]corev1.ResourceList, error) { return nil, nil }

// newLedger returns a ledger over total with class "gold" attached, and
// what gold's Wake receives.
func newLedger(t *testing.T, total corev1.ResourceList) (*ledger.Ledger, *wakes) {
	t.Helper()
	l, err := ledger.New("pool", total)
	require.NoError(t, err)
	w := &wakes{}
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: w.wake, Seed: noSeed}))
	return l, w
}

// hold admits offer for h and commits it, as a successful write does.
func hold(t *testing.T, l *ledger.Ledger, h ledger.Holder, created time.Time, offer corev1.ResourceList) {
	t.Helper()
	ok, msg := l.Admit(h, created, offer, true)
	require.True(t, ok, "admitting %s: %s", h.Key.Name, msg)
	l.Commit(h, "")
}

// wait makes h a waiter: its offer does not fit, and its denial is written.
func wait(t *testing.T, l *ledger.Ledger, h ledger.Holder, created time.Time, offer corev1.ResourceList) {
	t.Helper()
	ok, _ := l.Admit(h, created, offer, true)
	require.False(t, ok, "%s should not fit", h.Key.Name)
	l.Commit(h, "")
}

func names(hs []ledger.Holder) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Key.Name)
	}
	return out
}

func TestNew(t *testing.T) {
	cases := map[string]struct {
		reason  string
		name    string
		total   corev1.ResourceList
		wantErr string
	}{
		"EmptyName": {
			reason: "A budget needs a name: it labels metrics and messages.",
			name:   "", total: cpu("4"),
			wantErr: "empty name",
		},
		"NegativeQuantity": {
			reason: "A negative capacity is refused, naming the budget and the resource.",
			name:   "pool", total: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("-1Gi")},
			wantErr: `budget "pool": negative quantity in total: memory=-1Gi`,
		},
		"Zero": {
			reason: "A zero capacity is valid: nothing of it can be admitted.",
			name:   "pool", total: cpu("0"),
		},
		"NoTotal": {
			reason: "An empty total limits nothing.",
			name:   "pool",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := ledger.New(tc.name, tc.total)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				assert.Nil(t, l, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, tc.name, l.Name(), tc.reason)
			assertList(t, tc.total, l.Total(), tc.reason)
		})
	}
}

func TestNewCopiesTotal(t *testing.T) {
	total := cpu("4")
	l, err := ledger.New("pool", total)
	require.NoError(t, err)
	total[corev1.ResourceCPU] = resource.MustParse("100")
	assertList(t, cpu("4"), l.Total(), "the caller's map changed after New")
}

func TestResourcesAbsentFromTotalAreUnlimited(t *testing.T) {
	l, _ := newLedger(t, cpu("2"))
	huge := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Ti")}

	ok, msg := l.Admit(gold("a"), at(0), huge, true)
	require.True(t, ok, msg)
	ok, msg = l.Admit(gold("b"), at(1), huge, true)
	require.True(t, ok, msg)

	assertList(t, cpu("2"), l.Used(), "only cpu is counted, and both offers are")
	assertList(t, cpu("0"), l.Free(), "free")
	ok, msg = l.Admit(gold("c"), at(2), corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Ei")}, true)
	assert.True(t, ok, "memory is not limited: %s", msg)
}

func TestAdmitReservesAtomically(t *testing.T) {
	const workers = 64
	total := cpu("10")
	l, _ := newLedger(t, total)
	limit := total[corev1.ResourceCPU]

	var admitted, overs atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			h := gold(fmt.Sprintf("s%02d", i))
			if ok, _ := l.Admit(h, at(i%5), cpu("1"), true); ok {
				admitted.Add(1)
			}
			l.Commit(h, "")
			if used := l.Used()[corev1.ResourceCPU]; used.Cmp(limit) > 0 {
				overs.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()

	assert.EqualValues(t, 10, admitted.Load(), "exactly total/1 offers of 1 CPU are admitted")
	assert.Zero(t, overs.Load(), "Used was seen above Total")
	assertList(t, cpu("10"), l.Used(), "used")
	assertList(t, cpu("0"), l.Free(), "free")
	assert.Len(t, l.Waiting(), workers-10, "every refused offer waits")
}

func TestWriteInFlightCountsTheLargerOfCommittedAndPending(t *testing.T) {
	commit := func(l *ledger.Ledger, h ledger.Holder) { l.Commit(h, "") }
	rollback := func(l *ledger.Ledger, h ledger.Holder) { l.Rollback(h) }
	cases := map[string]struct {
		reason       string
		committed    string
		offer        string
		accepted     bool
		end          func(*ledger.Ledger, ledger.Holder)
		wantInFlight string
		wantAfter    string
	}{
		"ShrinkCommitted": {
			reason:    "Offering less keeps the old amount used until the write succeeds.",
			committed: "4", offer: "2", accepted: true, end: commit,
			wantInFlight: "4", wantAfter: "2",
		},
		"ShrinkRolledBack": {
			reason:    "A refused shrink leaves the old amount held.",
			committed: "4", offer: "2", accepted: true, end: rollback,
			wantInFlight: "4", wantAfter: "4",
		},
		"GrowCommitted": {
			reason:    "Offering more reserves the new amount at once.",
			committed: "2", offer: "4", accepted: true, end: commit,
			wantInFlight: "4", wantAfter: "4",
		},
		"GrowRolledBack": {
			reason:    "A refused growth returns the increase.",
			committed: "2", offer: "4", accepted: true, end: rollback,
			wantInFlight: "4", wantAfter: "2",
		},
		"DenialCommitted": {
			reason:    "A denial keeps what was held until it is written, then holds nothing.",
			committed: "4", accepted: false, end: commit,
			wantInFlight: "4", wantAfter: "0",
		},
		"DenialRolledBack": {
			reason:    "A refused denial leaves the acceptance, and what it holds, in place.",
			committed: "4", accepted: false, end: rollback,
			wantInFlight: "4", wantAfter: "4",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := newLedger(t, cpu("10"))
			h := gold("a")
			hold(t, l, h, at(0), cpu(tc.committed))

			var offer corev1.ResourceList
			if tc.offer != "" {
				offer = cpu(tc.offer)
			}
			ok, msg := l.Admit(h, at(0), offer, tc.accepted)
			require.True(t, ok, msg)
			assertList(t, cpu(tc.wantInFlight), l.Used(), tc.reason+": used while the write is in flight")

			tc.end(l, h)
			assertList(t, cpu(tc.wantAfter), l.Used(), tc.reason+": used after the write")
		})
	}
}

func TestReturnedCapacityWakesWaiters(t *testing.T) {
	cases := map[string]struct {
		reason string
		// setup leaves "a" holding or reserving all 4 CPU and returns what
		// gives capacity back.
		setup    func(t *testing.T, l *ledger.Ledger) func()
		wantUsed string
		wantWake []string
	}{
		"CommitOfADenial": {
			reason: "A denial, once written, returns what the slice held.",
			setup: func(t *testing.T, l *ledger.Ledger) func() {
				hold(t, l, gold("a"), at(0), cpu("4"))
				return func() {
					ok, _ := l.Admit(gold("a"), at(0), nil, false)
					require.True(t, ok)
					l.Commit(gold("a"), "7")
				}
			},
			wantUsed: "0", wantWake: []string{"w"},
		},
		"CommitOfAShrink": {
			reason: "A smaller offer, once written, returns the difference.",
			setup: func(t *testing.T, l *ledger.Ledger) func() {
				hold(t, l, gold("a"), at(0), cpu("4"))
				return func() {
					ok, msg := l.Admit(gold("a"), at(0), cpu("2"), true)
					require.True(t, ok, msg)
					l.Commit(gold("a"), "7")
				}
			},
			wantUsed: "2", wantWake: []string{"w"},
		},
		"RollbackOfAGrowth": {
			reason: "A refused write returns its reservation.",
			setup: func(t *testing.T, l *ledger.Ledger) func() {
				hold(t, l, gold("a"), at(0), cpu("2"))
				ok, msg := l.Admit(gold("a"), at(0), cpu("4"), true)
				require.True(t, ok, msg)
				return func() { l.Rollback(gold("a")) }
			},
			wantUsed: "2", wantWake: []string{"w"},
		},
		"RollbackOfANewAcceptance": {
			reason: "A refused first acceptance returns all of its reservation.",
			setup: func(t *testing.T, l *ledger.Ledger) func() {
				ok, msg := l.Admit(gold("a"), at(0), cpu("4"), true)
				require.True(t, ok, msg)
				return func() { l.Rollback(gold("a")) }
			},
			wantUsed: "0", wantWake: []string{"w"},
		},
		"Release": {
			reason: "A slice gone or leaving the class returns everything.",
			setup: func(t *testing.T, l *ledger.Ledger) func() {
				hold(t, l, gold("a"), at(0), cpu("4"))
				return func() { l.Release(gold("a")) }
			},
			wantUsed: "0", wantWake: []string{"w"},
		},
		"RollbackOfADenial": {
			reason: "A refused denial returns nothing, so nobody is woken.",
			setup: func(t *testing.T, l *ledger.Ledger) func() {
				hold(t, l, gold("a"), at(0), cpu("4"))
				ok, _ := l.Admit(gold("a"), at(0), nil, false)
				require.True(t, ok)
				return func() { l.Rollback(gold("a")) }
			},
			wantUsed: "4",
		},
		"CommitUnchanged": {
			reason: "Committing the same offer returns nothing, so nobody is woken.",
			setup: func(t *testing.T, l *ledger.Ledger) func() {
				hold(t, l, gold("a"), at(0), cpu("4"))
				return func() {
					ok, msg := l.Admit(gold("a"), at(0), cpu("4"), true)
					require.True(t, ok, msg)
					l.Commit(gold("a"), "")
				}
			},
			wantUsed: "4",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, w := newLedger(t, cpu("4"))
			give := tc.setup(t, l)
			wait(t, l, gold("w"), at(1), cpu("2"))
			require.Empty(t, w.take(), "nothing is woken before capacity returns")

			give()
			assert.Equal(t, tc.wantWake, w.take(), tc.reason)
			assertList(t, cpu(tc.wantUsed), l.Used(), tc.reason)
		})
	}
}

func TestWakeIsOldestFirstAndSkipsWhatDoesNotFit(t *testing.T) {
	l, w := newLedger(t, cpu("10"))
	hold(t, l, gold("a"), at(0), cpu("10"))
	// Waiting in an order unlike their ages: the order of wakes must come
	// from creation times, not from arrival.
	wait(t, l, gold("w4"), at(4), cpu("2"))
	wait(t, l, gold("w2"), at(2), cpu("8"))
	wait(t, l, gold("w3"), at(3), cpu("3"))
	wait(t, l, gold("w1"), at(1), cpu("6"))
	require.Equal(t, []string{"w1", "w2", "w3", "w4"}, names(l.Waiting()), "Waiting is oldest first")

	l.Release(gold("a"))

	// w1 (6) fits in 10; w2 (8) does not fit the 4 left and does not block
	// w3 (3), which leaves 1: too little for w4 (2).
	assert.Equal(t, []string{"w1", "w3"}, w.take())
	assert.Equal(t, []string{"w1", "w2", "w3", "w4"}, names(l.Waiting()), "waking does not admit: the woken re-admit themselves")
}

func TestWakeBreaksCreationTiesByName(t *testing.T) {
	l, w := newLedger(t, cpu("2"))
	hold(t, l, gold("a"), at(0), cpu("2"))
	wait(t, l, gold("y"), at(1), cpu("2"))
	wait(t, l, gold("x"), at(1), cpu("2"))

	l.Release(gold("a"))
	assert.Equal(t, []string{"x"}, w.take(), "same creation time: the name decides, and only one fits")
}

func TestOlderWaitersComeFirst(t *testing.T) {
	cases := map[string]struct {
		reason     string
		waiter     time.Time
		waiterAsks string
		newcomer   time.Time
		wantOK     bool
		wantMsg    []string
	}{
		"OlderWaiterThatFits": {
			reason: "Capacity freed for an older waiting slice is not taken by a younger one.",
			waiter: at(1), waiterAsks: "3", newcomer: at(2),
			wantOK:  false,
			wantMsg: []string{`budget pool: cpu: asked 2, 1 free`, "held for 1 older waiting slice(s)"},
		},
		"OlderWaiterThatDoesNotFit": {
			reason: "An older slice that cannot fit anyway does not block a younger one.",
			waiter: at(1), waiterAsks: "5", newcomer: at(2),
			wantOK: true,
		},
		"YoungerWaiter": {
			reason: "A younger waiting slice does not hold capacity against an older one.",
			waiter: at(3), waiterAsks: "3", newcomer: at(2),
			wantOK: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := newLedger(t, cpu("4"))
			hold(t, l, gold("a"), at(0), cpu("4"))
			wait(t, l, gold("w"), tc.waiter, cpu(tc.waiterAsks))
			l.Release(gold("a"))

			ok, msg := l.Admit(gold("n"), tc.newcomer, cpu("2"), true)
			assert.Equal(t, tc.wantOK, ok, "%s: %s", tc.reason, msg)
			for _, m := range tc.wantMsg {
				assert.Contains(t, msg, m, tc.reason)
			}
			if !ok {
				assert.Equal(t, []string{"w", "n"}, names(l.Waiting()), "the refused newcomer waits behind the older one")
				ok, msg = l.Admit(gold("w"), tc.waiter, cpu(tc.waiterAsks), true)
				assert.True(t, ok, "the older waiter takes what was held for it: %s", msg)
			}
		})
	}
}

func TestFIFOAcrossClasses(t *testing.T) {
	l, gw := newLedger(t, cpu("4"))
	sw := &wakes{}
	require.NoError(t, l.Attach("silver", ledger.Class{Wake: sw.wake, Seed: noSeed}))
	hold(t, l, gold("a"), at(0), cpu("4"))
	wait(t, l, silver("s"), at(1), cpu("3"))

	l.Release(gold("a"))
	assert.Equal(t, []string{"s"}, sw.take(), "the waiter is woken through its own class")
	assert.Empty(t, gw.take())

	ok, msg := l.Admit(gold("g"), at(2), cpu("2"), true)
	assert.False(t, ok, "an older waiting slice of another class sharing the budget comes first")
	assert.Contains(t, msg, "older waiting")
}

func TestSetTotal(t *testing.T) {
	t.Run("GrowingWakesWaiters", func(t *testing.T) {
		l, w := newLedger(t, cpu("2"))
		hold(t, l, gold("a"), at(0), cpu("2"))
		wait(t, l, gold("w"), at(1), cpu("3"))
		wait(t, l, gold("big"), at(2), cpu("9"))

		require.NoError(t, l.SetTotal(cpu("5")))
		assert.Equal(t, []string{"w"}, w.take(), "the waiter that now fits is woken, the one that does not is not")
		assertList(t, cpu("3"), l.Free(), "free")
	})

	t.Run("ShrinkingNeverRevokes", func(t *testing.T) {
		l, w := newLedger(t, cpu("10"))
		hold(t, l, gold("a"), at(0), cpu("8"))

		require.NoError(t, l.SetTotal(cpu("4")))
		assert.Empty(t, w.take(), "shrinking wakes nobody")
		assertList(t, cpu("8"), l.Used(), "a shrink revokes nothing")
		assertList(t, cpu("0"), l.Free(), "free is never below zero")

		ok, msg := l.Admit(gold("a"), at(0), cpu("8"), true)
		assert.True(t, ok, "a holder whose offer does not grow keeps it: %s", msg)
		l.Commit(gold("a"), "")
		ok, msg = l.Admit(gold("a"), at(0), cpu("6"), true)
		assert.True(t, ok, "a holder offered less, still above the total, keeps it: %s", msg)
		l.Commit(gold("a"), "")
		assertList(t, cpu("6"), l.Used(), "used after the shrink is written")

		ok, msg = l.Admit(gold("b"), at(1), cpu("1"), true)
		assert.False(t, ok, "nothing new is admitted until usage fits")
		assert.Contains(t, msg, "cpu: asked 1, 0 free", "the message never shows a negative free")

		ok, _ = l.Admit(gold("a"), at(0), cpu("7"), true)
		assert.False(t, ok, "a holder cannot grow while usage is above the total")
	})

	t.Run("NegativeKeepsTheOldTotal", func(t *testing.T) {
		l, _ := newLedger(t, cpu("4"))
		err := l.SetTotal(cpu("-1"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cpu=-1")
		assertList(t, cpu("4"), l.Total(), "total after a refused SetTotal")
	})

	t.Run("CopiesTheCallersList", func(t *testing.T) {
		l, _ := newLedger(t, cpu("4"))
		total := cpu("6")
		require.NoError(t, l.SetTotal(total))
		total[corev1.ResourceCPU] = resource.MustParse("100")
		assertList(t, cpu("6"), l.Total(), "the caller's map changed after SetTotal")
	})
}

// TestSetTotalLimitingANewResourceCountsWhatIsHeld: a budget that starts
// limiting a resource must count what Accepted slices already hold of it,
// whether they were admitted by this ledger or seeded from the cache.
func TestSetTotalLimitingANewResourceCountsWhatIsHeld(t *testing.T) {
	mem := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	}
	l, _ := newLedger(t, cpu("4"))
	hold(t, l, gold("a"), at(0), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")})

	require.NoError(t, l.SetTotal(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("10Gi")}))
	assert.Empty(t, cmp.Diff(resource.MustParse("8Gi"), l.Used()[corev1.ResourceMemory], byValue), "memory held by a before memory was limited")

	ok, _ := l.Admit(gold("b"), at(1), mem("4Gi"), true)
	assert.False(t, ok, "8Gi held + 4Gi asked > 10Gi")
}

func TestEnsureSeeded(t *testing.T) {
	t.Run("CountsWhatSeedReturnsBeforeAdmitting", func(t *testing.T) {
		l, err := ledger.New("pool", cpu("4"))
		require.NoError(t, err)
		var calls atomic.Int32
		seed := func() (map[types.NamespacedName]corev1.ResourceList, error) {
			calls.Add(1)
			return map[types.NamespacedName]corev1.ResourceList{gold("a").Key: cpu("3")}, nil
		}
		require.NoError(t, l.Attach("gold", ledger.Class{Seed: seed}))

		require.NoError(t, l.EnsureSeeded())
		require.NoError(t, l.EnsureSeeded())
		assert.EqualValues(t, 1, calls.Load(), "seeded once per class")
		assertList(t, cpu("3"), l.Used(), "used after seeding")

		ok, msg := l.Admit(gold("b"), at(1), cpu("2"), true)
		assert.False(t, ok, "2 fits an empty budget of 4 but not the 1 left after the seed")
		assert.Contains(t, msg, "cpu: asked 2, 1 free")

		ok, msg = l.Admit(gold("a"), at(0), cpu("3"), true)
		assert.True(t, ok, "a seeded slice keeps what it holds: %s", msg)
	})

	t.Run("ClassAttachedLaterIsSeededNextTime", func(t *testing.T) {
		l, err := ledger.New("pool", cpu("10"))
		require.NoError(t, err)
		var goldCalls, silverCalls atomic.Int32
		require.NoError(t, l.Attach("gold", ledger.Class{Seed: func() (map[types.NamespacedName]corev1.ResourceList, error) {
			goldCalls.Add(1)
			return map[types.NamespacedName]corev1.ResourceList{gold("a").Key: cpu("3")}, nil
		}}))
		require.NoError(t, l.EnsureSeeded())
		require.NoError(t, l.Attach("silver", ledger.Class{Seed: func() (map[types.NamespacedName]corev1.ResourceList, error) {
			silverCalls.Add(1)
			return map[types.NamespacedName]corev1.ResourceList{silver("a").Key: cpu("2")}, nil
		}}))
		require.NoError(t, l.EnsureSeeded())

		assert.EqualValues(t, 1, goldCalls.Load())
		assert.EqualValues(t, 1, silverCalls.Load())
		assertList(t, cpu("5"), l.Used(), "the same slice name in two classes is two holders")
	})

	t.Run("DoesNotCountAKnownHolderTwice", func(t *testing.T) {
		l, err := ledger.New("pool", cpu("10"))
		require.NoError(t, err)
		require.NoError(t, l.Attach("gold", ledger.Class{Seed: func() (map[types.NamespacedName]corev1.ResourceList, error) {
			return map[types.NamespacedName]corev1.ResourceList{gold("a").Key: cpu("3")}, nil
		}}))
		hold(t, l, gold("a"), at(0), cpu("3"))

		require.NoError(t, l.EnsureSeeded())
		assertList(t, cpu("3"), l.Used(), "used")
	})

	t.Run("ErrorIsRetried", func(t *testing.T) {
		l, err := ledger.New("pool", cpu("4"))
		require.NoError(t, err)
		var calls atomic.Int32
		require.NoError(t, l.Attach("gold", ledger.Class{Seed: func() (map[types.NamespacedName]corev1.ResourceList, error) {
			if calls.Add(1) == 1 {
				return nil, errors.New("cache not synced")
			}
			return map[types.NamespacedName]corev1.ResourceList{gold("a").Key: cpu("1")}, nil
		}}))

		err = l.EnsureSeeded()
		require.Error(t, err)
		assert.Contains(t, err.Error(), `class "gold"`)
		assert.Contains(t, err.Error(), "cache not synced")

		require.NoError(t, l.EnsureSeeded())
		assert.EqualValues(t, 2, calls.Load(), "a failed seed is not marked done")
		assertList(t, cpu("1"), l.Used(), "used")
	})
}

func TestLagging(t *testing.T) {
	cases := map[string]struct {
		reason string
		write  func(*ledger.Ledger, ledger.Holder)
		cache  string
		want   bool
	}{
		"CacheAtTheVersionWrittenFrom": {
			reason: "The cache still shows the version our write replaced.",
			write:  func(l *ledger.Ledger, h ledger.Holder) { l.Commit(h, "5") },
			cache:  "5", want: true,
		},
		"CacheCaughtUp": {
			reason: "The cache shows a later version.",
			write:  func(l *ledger.Ledger, h ledger.Holder) { l.Commit(h, "5") },
			cache:  "6", want: false,
		},
		"NothingWritten": {
			reason: "No write was needed: nothing to wait for.",
			write:  func(l *ledger.Ledger, h ledger.Holder) { l.Commit(h, "") },
			cache:  "5", want: false,
		},
		"WriteRefused": {
			reason: "A refused write leaves nothing for the cache to catch up with.",
			write:  func(l *ledger.Ledger, h ledger.Holder) { l.Rollback(h) },
			cache:  "5", want: false,
		},
		"Released": {
			reason: "A released slice is forgotten.",
			write: func(l *ledger.Ledger, h ledger.Holder) {
				l.Commit(h, "5")
				l.Release(h)
			},
			cache: "5", want: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := newLedger(t, cpu("4"))
			h := gold("a")
			ok, msg := l.Admit(h, at(0), cpu("1"), true)
			require.True(t, ok, msg)
			tc.write(l, h)
			assert.Equal(t, tc.want, l.Lagging(h, tc.cache), tc.reason)
			assert.False(t, l.Lagging(silver("a"), tc.cache), "another class's holder of the same slice is not lagging")
		})
	}

	t.Run("Denial", func(t *testing.T) {
		l, _ := newLedger(t, cpu("4"))
		h := gold("a")
		ok, _ := l.Admit(h, at(0), nil, false)
		require.True(t, ok)
		l.Commit(h, "5")
		assert.True(t, l.Lagging(h, "5"), "a written denial, holding nothing, is still tracked until the cache sees it")
	})
}

func TestAttachTwiceIsAnError(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	err := l.Attach("gold", ledger.Class{Seed: noSeed})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `class "gold"`)
	assert.Contains(t, err.Error(), `budget "pool"`)
	assert.NoError(t, l.Attach("silver", ledger.Class{Seed: noSeed}), "another class may attach")
}

// Detach keeps what the class's slices hold (they still hold it in the
// cluster: releasing it would let another class be admitted into capacity
// that is not free) and forgets its waiters; attaching again re-seeds,
// dropping only what slices deleted in between held.
func TestDetachKeepsTheClassHoldingsUntilReseeded(t *testing.T) {
	l, gw := newLedger(t, cpu("4"))
	sw := &wakes{}
	require.NoError(t, l.Attach("silver", ledger.Class{Wake: sw.wake, Seed: noSeed}))
	hold(t, l, gold("a"), at(0), cpu("1"))
	hold(t, l, gold("b"), at(1), cpu("2"))
	wait(t, l, gold("g"), at(2), cpu("2"))
	wait(t, l, silver("w"), at(3), cpu("2"))

	l.Detach("gold")

	assertList(t, cpu("3"), l.Used(), "gold's Accepted slices still hold what they were granted")
	assert.Equal(t, []string{"w"}, names(l.Waiting()), "gold's waiter is forgotten")
	assert.Empty(t, sw.take(), "nothing was freed, so no one is woken")
	ok, _ := l.Admit(silver("w"), at(3), cpu("2"), true)
	assert.False(t, ok, "silver cannot take capacity gold's slices still hold")

	// gold is served again: a was deleted meanwhile, b is still there; the
	// seed (from a cache that may lag our own writes) shows neither yet.
	exists := map[types.NamespacedName]bool{gold("b").Key: true}
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: gw.wake, Seed: noSeed,
		Exists: func(k types.NamespacedName) bool { return exists[k] }}))
	require.NoError(t, l.EnsureSeeded())
	assertList(t, cpu("2"), l.Used(), "a's holding is dropped, b's kept although the cache does not show it Accepted")
	assert.Equal(t, []string{"w"}, sw.take(), "the freed capacity wakes silver's waiter")
}

// TestGrowthIsNotHeldForAWaiterThatFitsOnlyInTheGrowersOwnHolding: an older
// waiting slice blocks a growth only if it fits what is free; capacity the
// growing slice holds is not free, and counting it as free both denies a
// growth that fits and revokes what the slice was granted.
func TestGrowthIsNotHeldForAWaiterThatFitsOnlyInTheGrowersOwnHolding(t *testing.T) {
	l, _ := newLedger(t, cpu("8"))
	hold(t, l, gold("b"), at(0), cpu("4"))
	hold(t, l, gold("a"), at(5), cpu("2"))
	wait(t, l, gold("w"), at(1), cpu("3"))
	require.Empty(t, cmp.Diff(cpu("2"), l.Free(), byValue), "2 CPU free, less than w's 3")

	ok, msg := l.Admit(gold("a"), at(5), cpu("3"), true)
	assert.True(t, ok, "a grows by 1 with 2 free, and w does not fit the 2 free: %s", msg)
}

func TestCheckAnswersLikeAdmitWithoutCharging(t *testing.T) {
	cases := map[string]struct {
		reason   string
		offer    string
		accepted bool
		wantOK   bool
	}{
		"Fits": {
			reason: "An offer that fits is allowed and reserves nothing.",
			offer:  "1", accepted: true, wantOK: true,
		},
		"DoesNotFit": {
			reason: "An offer that does not fit is refused with Admit's message and does not wait.",
			offer:  "3", accepted: true,
		},
		"Denial": {
			reason:   "A denial is always allowed and releases nothing.",
			accepted: false, wantOK: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, w := newLedger(t, cpu("4"))
			hold(t, l, gold("a"), at(0), cpu("2"))
			var offer corev1.ResourceList
			if tc.offer != "" {
				offer = cpu(tc.offer)
			}

			ok, msg := l.Check(gold("n"), at(1), offer, tc.accepted)
			assert.Equal(t, tc.wantOK, ok, "%s: %s", tc.reason, msg)
			assertList(t, cpu("2"), l.Used(), tc.reason+": used after Check")
			assert.Empty(t, l.Waiting(), "Check never joins the waiters")
			denied, _ := l.Check(gold("a"), at(0), nil, false)
			assert.True(t, denied)
			assertList(t, cpu("2"), l.Used(), "a checked denial of a holder keeps what it holds")
			assert.Empty(t, w.take(), "Check wakes nobody")

			admitted, admitMsg := l.Admit(gold("n"), at(1), offer, tc.accepted)
			assert.Equal(t, ok, admitted, "Admit agrees with Check")
			assert.Equal(t, msg, admitMsg, "Check's message is Admit's")
		})
	}
}
