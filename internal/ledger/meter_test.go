package ledger_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// told is a ledger.Meter that records what it is told, as strings.
type told struct{ calls []string }

func (m *told) Consumer(c string, held, inUse corev1.ResourceList) {
	m.calls = append(m.calls, c+" held "+show(held)+" uses "+show(inUse))
}

// take returns the calls so far and forgets them.
func (m *told) take() []string {
	out := m.calls
	m.calls = nil
	return out
}

func show(rl corev1.ResourceList) string {
	q, ok := rl[corev1.ResourceCPU]
	if !ok {
		return "-"
	}
	return q.String()
}

// The meter hears of each change of what a consumer's slices count and
// what its pods are charged, once, when it happens, and of nothing else.
func TestMeterToldEachConsumersChanges(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	holdAs(l, "a1", "acme", cpu("2"))
	m := &told{}
	l.SetMeter(m)
	assert.Equal(t, []string{"acme held 2 uses -"}, m.take(), "told what is held when set")
	l.SetMeter(m)
	assert.Empty(t, m.take(), "the same meter again: nothing told")

	l.ObserveSlice(slice("a2", "1", cpu("3"), consumer("acme")))
	l.ObserveSlice(slice("b1", "1", cpu("1"), consumer("bravo")))
	assert.Equal(t, []string{"acme held 5 uses -", "bravo held 1 uses -"}, m.take())
	l.ObserveSlice(slice("a2", "1", cpu("3"), consumer("acme")))
	l.ObserveSlice(slice("a2", "2", cpu("3"), consumer("acme")))
	assert.Empty(t, m.take(), "a version that changes nothing held tells nothing")

	l.ObserveQuota(key("a1"), uid("a1"), "qa1", "user-a1", cpu("2"))
	l.ObservePod(podKey("p1"), "user-a1", cpu("1"), ledger.PodMeta{})
	assert.Equal(t, []string{"acme held 5 uses 1"}, m.take(), "a running pod: in use, within the grant")
	l.ObservePod(podKey("p2"), "user-a1", cpu("2"), ledger.PodMeta{})
	assert.Equal(t, []string{"acme held 6 uses 3"}, m.take(), "pods beyond the grant are held too")
	l.ObservePod(podKey("stray"), "user-of-no-slice", cpu("4"), ledger.PodMeta{})
	assert.Empty(t, m.take(), "a pod no slice's Quota names is no one's")

	l.ObserveSlice(slice("a1", "2", cpu("2"), consumer("bravo")))
	assert.Equal(t, []string{"acme held 3 uses -", "bravo held 4 uses 3"}, m.take(),
		"a slice that moves to another consumer takes what it holds and uses along")

	l.ForgetPod(podKey("p2"))
	l.ForgetPod(podKey("p1"))
	assert.Equal(t, []string{"bravo held 3 uses 1", "bravo held 3 uses -"}, m.take())
	l.ForgetSlice(key("a1"), uid("a1"))
	l.ForgetSlice(key("b1"), uid("b1"))
	assert.Equal(t, []string{"bravo held 1 uses -", "bravo held - uses -"}, m.take(), "deleted: it holds nothing")

	other := &told{}
	l.SetMeter(other)
	assert.Equal(t, []string{"acme held - uses -"}, m.take(), "the meter replaced is told each consumer holds nothing")
	assert.Equal(t, []string{"acme held 3 uses -"}, other.take())
	l.ForgetAll()
	assert.Equal(t, []string{"acme held - uses -"}, other.take(), "books forgotten: nothing is counted")
	l.SetMeter(nil)
	holdAs(l, "a1", "acme", cpu("2"))
	assert.Empty(t, cmp.Diff([]string(nil), other.take()), "no meter: nothing told")
}

// toldNames is a ledger.Meter that records the resources it is told of.
type toldNames struct{ seen map[corev1.ResourceName]bool }

func (m *toldNames) Consumer(_ string, held, inUse corev1.ResourceList) {
	for n := range held {
		m.seen[n] = true
	}
	for n := range inUse {
		m.seen[n] = true
	}
}

// A slice counts whatever it asks, but the meter hears only of what the
// budget limits (docs/metering.md): a cpu budget meters no pods.
func TestMeterToldOnlyWhatTheBudgetLimits(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	m := &toldNames{seen: map[corev1.ResourceName]bool{}}
	l.SetMeter(m)
	asks := cpu("3")
	asks[corev1.ResourcePods] = resource.MustParse("110")
	l.ObserveSlice(slice("a1", "1", asks, consumer("acme")))
	l.ObserveQuota(key("a1"), uid("a1"), "qa1", "user-a1", asks)
	l.ObservePod(podKey("p1"), "user-a1", cpu("1"), ledger.PodMeta{})
	assert.Equal(t, map[corev1.ResourceName]bool{corev1.ResourceCPU: true}, m.seen)
}
