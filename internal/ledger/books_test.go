package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
)

// A waiting slice is told what blocks it now: acme holds 5 of its 8-CPU
// limit and asks 4 more while globex's 8 fill the budget (free capacity
// blocks it first); once globex's slice is gone the free capacity no
// longer blocks it, its consumer limit does, and the ledger wakes it so
// that its condition says so. Neither message carries a figure that moves
// with other slices (what is free, what acme's other slices hold).
func TestWaiterToldWhatBlocksItNow(t *testing.T) {
	l, w := newLedgerOpts(t, "shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("14400m")},
		ledger.Options{ConsumerLimit: cpu("8")})
	holdAs(l, "acme-1", "acme", cpu("5"))
	holdAs(l, "globex-1", "globex", cpu("8"))
	r := refused(t, []*ledger.Ledger{l}, request("acme-2", "acme", at(3), cpu("4")))
	assert.Equal(t, ledger.ReasonExhausted, r.Reason)
	assert.Equal(t, `budget shared: cpu: asked 4, waits until 4 is free (cpu: consumer "acme" would go over its limit 8 with what its other slices hold or are promised: `+
		`it fits only if they release capacity or its limit is raised)`, r.Message, "what would have to change, beyond free capacity")
	w.take()

	l.ForgetSlice(key("globex-1"), uid("globex-1"))
	require.Eventually(t, func() bool { return contains(w.take(), "acme-2") }, testwait.Timeout, 10*time.Millisecond,
		"the waiter is woken when what blocks it changes")
	r = refused(t, []*ledger.Ledger{l}, request("acme-2", "acme", at(3), cpu("4")))
	assert.Equal(t, ledger.ReasonConsumerLimit, r.Reason)
	assert.Equal(t, `budget shared: consumer "acme" would go over its limit beside what its other slices hold or are promised: cpu: asked 4, limit 8 `+
		`(it fits only if they release capacity or its limit is raised)`, r.Message, "acme holds 5 of 8: not at its limit, but 4 more would take it over")

	// Told once: with nothing changed, no more wakes.
	time.Sleep(300 * time.Millisecond)
	assert.NotContains(t, w.take(), "acme-2", "nothing changed: not woken again")
}

// A waiter is not woken when only figures move (issue 42): b, asking 6
// while 4 are free, keeps its message when another slice takes 2 more, and
// is not woken to rewrite it; a waiter whose block changes in kind in the
// same change (sentinel: its consumer's limit now blocks it too) is woken.
// The sentinel joined after b, so it is woken after b would have been.
func TestWaiterNotWokenByMovingFigures(t *testing.T) {
	l, w := newLedger(t, cpu("10"))
	require.NoError(t, l.SetConsumerLimit("acme", cpu("4")))
	hold(l, "a", cpu("7"))
	r := refused(t, []*ledger.Ledger{l}, request("b", "", at(1), cpu("6")))
	want := "budget pool: cpu: asked 6, waits until 6 is free"
	assert.Equal(t, want, r.Message)
	s := refused(t, []*ledger.Ledger{l}, request("sentinel", "acme", at(2), cpu("4")))
	assert.Equal(t, "budget pool: cpu: asked 4, waits until 4 is free", s.Message)
	w.take()

	admitted(t, []*ledger.Ledger{l}, request("c", "acme", at(3), cpu("1")))
	var woken []string
	require.Eventually(t, func() bool {
		woken = append(woken, w.take()...)
		return contains(woken, "sentinel")
	}, testwait.Timeout, 10*time.Millisecond, "the sentinel is woken: acme's limit now blocks it too")
	assert.NotContains(t, append(woken, w.take()...), "b", "b's block did not change in kind: not woken")
	r = refused(t, []*ledger.Ledger{l}, request("b", "", at(1), cpu("6")))
	assert.Equal(t, want, r.Message, "2 free now, not 3: the message is the same")
}

// A lost answer is held until one read says it was not applied, and a
// deletion ends every attempt of the slice, answered or not: after the
// first admitted slices are deleted with their answers lost, the budget
// holds nothing for them and admits the next.
func TestLostAnswersOfDeletedSlicesHoldNothing(t *testing.T) {
	l, w := newLedger(t, cpu("2"))
	for _, n := range []string{"s0", "s1"} {
		l.ObserveSlice(slice(n, "1", nil, denied))
		a := admit(t, l, gold(n), "1", at(0), cpu("1"))
		l.Done(a, ledger.Unknown)
	}
	wait(t, l, gold("s2"), at(1), cpu("1"))
	assertList(t, cpu("2"), l.Used(), "two unanswered writes are held")
	w.take()
	// s0 was not applied (the read shows its base); s1 is deleted.
	assert.Zero(t, l.SettleRead(key("s0"), "1", time.Now()))
	l.ForgetSlice(key("s1"), uid("s1"))
	assertList(t, cpu("0"), l.Used(), "nothing held for either")
	assert.Contains(t, w.take(), "s2", "the waiter is woken to take the capacity")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Once its feed stopped and its books were forgotten, a ledger admits and
// refuses nothing until a feed started since has counted the cluster
// again: a decision still in flight when its manager stopped would
// otherwise be admitted against empty books (a victim shrunk to 4 whose
// pods use 8 was given its 8 back). A feed of the epoch before counts
// nothing.
func TestForgottenBooksAdmitNothingUntilCounted(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	hold(l, "spot", cpu("8"))
	stale := l.Epoch()
	l.ForgetAll()
	for _, r := range []ledger.Request{request("spot", "", at(0), cpu("8")), request("gold", "", at(1), cpu("2"))} {
		got := refused(t, []*ledger.Ledger{l}, r)
		assert.Equal(t, ledger.ReasonNotCounted, got.Reason, "%s: nothing is decided on forgotten books", r.Key.Name)
		assert.Equal(t, ledger.ReasonNotCounted, ledger.CheckAll([]*ledger.Ledger{l}, r).Reason, "nor consulted")
	}
	assert.Empty(t, l.Waiting(), "nobody joins a line on forgotten books")

	l.Counted(stale)
	assert.Equal(t, ledger.ReasonNotCounted, refused(t, []*ledger.Ledger{l}, request("gold", "", at(1), cpu("2"))).Reason,
		"the stopped feed's epoch counts nothing")
	l.Counted(l.Epoch())
	hold(l, "spot", cpu("8")) // what the new feed's initial list shows
	assert.Equal(t, ledger.ReasonExhausted, refused(t, []*ledger.Ledger{l}, request("gold", "", at(1), cpu("6"))).Reason)
	admitted(t, []*ledger.Ledger{l}, request("gold", "", at(1), cpu("2")))
}
