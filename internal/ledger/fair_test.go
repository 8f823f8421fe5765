package ledger_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// One consumer's burst of 20 waiters, all older, cannot keep another
// consumer's single waiter waiting once capacity frees; OldestFirst serves
// the burst first.
func TestFairOrderBurstDoesNotStarve(t *testing.T) {
	cases := map[string]struct {
		reason      string
		oldestFirst bool
		want        []string
	}{
		"Fair": {
			reason: "Capacity for 4 goes consumer by consumer: B's single waiter gets one of the 4, A's burst the other 3, oldest first.",
			want:   []string{"a01", "a02", "a03", "b"},
		},
		"OldestFirst": {
			reason: "Plain creation order: A's 4 oldest waiters take it all, B's younger single waiter keeps waiting.",
			want:   []string{"a01", "a02", "a03", "a04"}, oldestFirst: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, w := newLedgerOpts(t, "pool", cpu("4"), ledger.Options{OldestFirst: tc.oldestFirst})
			holdAs(l, "x", "Z", cpu("4"))
			for i := 1; i <= 20; i++ {
				refused(t, []*ledger.Ledger{l}, request(fmt.Sprintf("a%02d", i), "A", at(i), cpu("1")))
			}
			refused(t, []*ledger.Ledger{l}, request("b", "B", at(30), cpu("1")))
			require.Equal(t, 21, l.WaitingCount())
			require.Empty(t, w.take())

			l.ForgetSlice(key("x"), uid("x"))
			woken := w.take()
			assert.Empty(t, cmp.Diff(tc.want, sorted(woken)), "%s\nwoken (-want +got)", tc.reason)

			// The woken ones are admitted; the others find the capacity
			// promised.
			for _, n := range woken {
				c := "A"
				if n == "b" {
					c = "B"
				}
				admitted(t, []*ledger.Ledger{l}, request(n, c, at(0), cpu("1")))
			}
			assert.Equal(t, 17, l.WaitingCount(), "admitted waiters left the line")
			assertList(t, cpu("4"), l.Used(), "Used")
		})
	}
}

// The consumer holding the least by its dominant share goes first: B holds
// little CPU but most of the memory, so A, holding more CPU but less in
// share, is served first although B's waiter is older.
func TestFairOrderDominantShare(t *testing.T) {
	cases := map[string]struct {
		reason      string
		oldestFirst bool
		want        []string
	}{
		"Fair": {
			reason: "A's dominant share is 3/10 (cpu), B's 6/10 (memory, although only 1/10 of cpu): A's waiter first.",
			want:   []string{"wa"},
		},
		"OldestFirst": {
			reason: "Plain creation order: B's waiter is older.",
			want:   []string{"wb"}, oldestFirst: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, w := newLedgerOpts(t, "pool", res("10", "10Gi"), ledger.Options{OldestFirst: tc.oldestFirst})
			holdAs(l, "a", "A", res("3", "0"))
			holdAs(l, "b", "B", res("1", "6Gi"))
			holdAs(l, "c", "C", res("6", "0"))
			refused(t, []*ledger.Ledger{l}, request("wb", "B", at(1), cpu("1")))
			refused(t, []*ledger.Ledger{l}, request("wa", "A", at(2), cpu("1")))

			l.ObserveSlice(slice("c", "2", res("5", "0"), consumer("C")))
			assert.Equal(t, tc.want, w.take(), tc.reason)
		})
	}
}

// Capacity promised to a consumer's waiters counts in its share: with
// capacity for 4, two consumers holding nothing get 2 each.
func TestFairOrderCountsPromised(t *testing.T) {
	l, w := newLedgerOpts(t, "pool", cpu("4"), ledger.Options{})
	holdAs(l, "x", "Z", cpu("4"))
	for i := 1; i <= 4; i++ {
		refused(t, []*ledger.Ledger{l}, request(fmt.Sprintf("a%d", i), "A", at(i), cpu("1")))
		refused(t, []*ledger.Ledger{l}, request(fmt.Sprintf("b%d", i), "B", at(10+i), cpu("1")))
	}
	l.ForgetSlice(key("x"), uid("x"))
	assert.Equal(t, []string{"a1", "a2", "b1", "b2"}, sorted(w.take()))
}

// With one consumer, fair order and OldestFirst are both plain creation
// order (not name order), and a waiter that does not fit does not block
// younger ones that do.
func TestOneConsumerIsFIFO(t *testing.T) {
	for _, oldestFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("OldestFirst=%t", oldestFirst), func(t *testing.T) {
			l, w := newLedgerOpts(t, "pool", cpu("4"), ledger.Options{OldestFirst: oldestFirst})
			holdAs(l, "x", "A", cpu("4"))
			refused(t, []*ledger.Ledger{l}, request("z", "A", at(1), cpu("3")))
			refused(t, []*ledger.Ledger{l}, request("y", "A", at(2), cpu("2")))
			refused(t, []*ledger.Ledger{l}, request("w", "A", at(4), cpu("1")))
			refused(t, []*ledger.Ledger{l}, request("v", "A", at(3), cpu("1")))

			l.ForgetSlice(key("x"), uid("x"))
			assert.Equal(t, []string{"z", "v"}, w.take(), "z (3, oldest) fits, y (2) does not fit the 1 left, v (created before w) takes it")
		})
	}
}

// A consumer at its limit does not hold back another consumer's waiter,
// even when it holds the least; it is served once its own holding drops.
func TestFairOrderSkipsConsumerAtLimit(t *testing.T) {
	l, w := newLedgerOpts(t, "pool", gpus("4"), ledger.Options{ConsumerLimit: gpus("1")})
	holdAs(l, "a", "A", gpus("1"))
	holdAs(l, "x", "Z", gpus("3"))
	refused(t, []*ledger.Ledger{l}, request("wa", "A", at(1), gpus("1")))
	refused(t, []*ledger.Ledger{l}, request("wb", "B", at(2), gpus("1")))

	l.ForgetSlice(key("x"), uid("x"))
	assert.Equal(t, []string{"wb"}, w.take(), "A is at its limit: only B's waiter is promised")
	got := refused(t, []*ledger.Ledger{l}, request("wa", "A", at(1), gpus("1")))
	assert.Equal(t, ledger.ReasonConsumerLimit, got.Reason)

	l.ForgetSlice(key("a"), uid("a"))
	assert.Equal(t, []string{"wa"}, w.take(), "A's holding dropped")
}

func TestWaitingCount(t *testing.T) {
	l, _ := newLedgerOpts(t, "pool", cpu("2"), ledger.Options{})
	holdAs(l, "x", "Z", cpu("2"))
	assert.Zero(t, l.WaitingCount())

	refused(t, []*ledger.Ledger{l}, request("a", "A", at(1), cpu("1")))
	refused(t, []*ledger.Ledger{l}, request("b", "B", at(2), cpu("1")))
	assert.Equal(t, 2, l.WaitingCount())

	refused(t, []*ledger.Ledger{l}, request("a", "A", at(1), cpu("2")))
	assert.Equal(t, 2, l.WaitingCount(), "asking again keeps one place")
	refused(t, []*ledger.Ledger{l}, request("a", "C", at(1), cpu("2")))
	assert.Equal(t, 2, l.WaitingCount(), "a slice whose consumer changed keeps one place")

	assert.NotNil(t, ledger.CheckAll([]*ledger.Ledger{l}, request("c", "A", at(3), cpu("1"))))
	assert.Equal(t, 2, l.WaitingCount(), "a dry run joins no line")

	l.Leave(gold("b"))
	assert.Equal(t, 1, l.WaitingCount())
	l.ForgetSlice(key("x"), uid("x"))
	admitted(t, []*ledger.Ledger{l}, request("a", "C", at(1), cpu("2")))
	assert.Zero(t, l.WaitingCount(), "an admitted slice leaves the line")
}
