package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// A waiting slice is told what blocks it now: acme holds 5 of its 8-CPU
// limit and asks 4 more while globex's 8 fill the budget (free capacity
// blocks it first); once globex's slice is gone the free capacity no
// longer blocks it, its consumer limit does, and the ledger wakes it so
// that its condition says so, with the figures of now.
func TestWaiterToldWhatBlocksItNow(t *testing.T) {
	l, w := newLedgerOpts(t, "shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("14400m")},
		ledger.Options{ConsumerLimit: cpu("8")})
	holdAs(l, "acme-1", "acme", cpu("5"))
	holdAs(l, "globex-1", "globex", cpu("8"))
	r := refused(t, []*ledger.Ledger{l}, request("acme-2", "acme", at(3), cpu("4")))
	assert.Equal(t, ledger.ReasonExhausted, r.Reason)
	assert.Equal(t, `budget shared: cpu: asked 4, 1400m free (cpu: consumer "acme" would hold 9 of its limit 8: `+
		`it fits only if its other slices release 1 or its limit is raised)`, r.Message, "what would have to change, beyond free capacity")
	w.take()

	l.ForgetSlice(key("globex-1"), uid("globex-1"))
	require.Eventually(t, func() bool { return contains(w.take(), "acme-2") }, 2*time.Second, 10*time.Millisecond,
		"the waiter is woken when what blocks it changes")
	r = refused(t, []*ledger.Ledger{l}, request("acme-2", "acme", at(3), cpu("4")))
	assert.Equal(t, ledger.ReasonConsumerLimit, r.Reason)
	assert.Equal(t, `budget shared: consumer "acme" is at its limit: cpu: asked 4, holds 5, limit 8`, r.Message)

	// Told once: with nothing changed, no more wakes.
	time.Sleep(300 * time.Millisecond)
	assert.NotContains(t, w.take(), "acme-2", "nothing changed: not woken again")
}

// The figures in a waiter's message change with what is held, and the
// waiter is told: a 6-CPU ask waiting on 4 free learns when 2 more are taken.
func TestWaiterToldNewFigures(t *testing.T) {
	l, w := newLedger(t, cpu("10"))
	hold(l, "a", cpu("6"))
	r := refused(t, []*ledger.Ledger{l}, request("b", "", at(1), cpu("6")))
	assert.Equal(t, "budget pool: cpu: asked 6, 4 free", r.Message)
	w.take()
	admit(t, l, gold("c"), "1", at(2), cpu("2"))
	require.Eventually(t, func() bool { return contains(w.take(), "b") }, 2*time.Second, 10*time.Millisecond)
	r = refused(t, []*ledger.Ledger{l}, request("b", "", at(1), cpu("6")))
	assert.Equal(t, "budget pool: cpu: asked 6, 2 free", r.Message)
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
