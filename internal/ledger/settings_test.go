package ledger_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// reclaims records what a ledger's reclaim hook receives.
type reclaims struct {
	mu  sync.Mutex
	got []ledger.Reclaim
}

func (r *reclaims) hook(x ledger.Reclaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x)
}

func (r *reclaims) take() []ledger.Reclaim {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// A closed ledger admits nothing new and revokes nothing: a new slice
// waits with a message naming why, an Accepted slice keeps (or lowers) its
// offer, no victim is reclaimed for a waiter; opened again, the waiter is
// woken and admitted.
func TestClosedAdmitsNothingNewRevokesNothing(t *testing.T) {
	l, spotW, goldW := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "1", cpu("4"), inClass("spot"), consumer("c")))
	l.SetClosed(`SliceBudget "pool" not found: admits nothing new`)
	assert.Equal(t, `SliceBudget "pool" not found: admits nothing new`, l.Closed())

	r := refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("1")))
	assert.Equal(t, ledger.ReasonUnavailable, r.Reason, "closed is not exhausted (issue 42)")
	assert.Equal(t, `budget pool is unavailable: SliceBudget "pool" not found: admits nothing new`, r.Message)
	assert.Equal(t, []string{"cpu"}, r.Resources)
	_, capped := l.Cap(key("s"))
	assert.False(t, capped, "closed: nothing is reclaimed for a waiter")
	assert.Empty(t, spotW.take(), "no victim woken")

	spotAsk := func(offer corev1.ResourceList) ledger.Request {
		return ledger.Request{Holder: ledger.Holder{Class: "spot", Key: key("s")}, UID: uid("s"), Base: "1", Created: at(1), Consumer: "c", Offer: offer}
	}
	admitted(t, []*ledger.Ledger{l}, spotAsk(cpu("4")))
	admitted(t, []*ledger.Ledger{l}, spotAsk(cpu("3")))
	r = refused(t, []*ledger.Ledger{l}, spotAsk(cpu("5")))
	assert.Contains(t, r.Message, "admits nothing new", "growing is something new")

	goldW.take()
	l.SetClosed("")
	assert.Empty(t, l.Closed())
	assert.Equal(t, []string{"g1"}, goldW.take(), "opened: the waiter that fits is woken")
	admitted(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("1")))
}

// SetLimits changes which resources are limited, not only their amounts:
// a resource dropped is unlimited, one added is limited; raising the total
// wakes the waiter it now fits; bad totals change nothing.
func TestSetLimitsChangesTheResources(t *testing.T) {
	l, w := newLedger(t, cpu("10"))
	hold(l, "a", res("6", "1Gi"))
	wait(t, l, gold("b"), at(2), res("6", "1Gi"))
	w.take()

	require.NoError(t, l.SetLimits(res("12", "4Gi")))
	assert.Equal(t, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}, l.Resources())
	assertList(t, res("12", "4Gi"), l.Total(), "the new total")
	assert.Equal(t, []string{"b"}, w.take(), "the waiter fits the larger total")
	admit(t, l, gold("b"), "1", at(2), res("6", "1Gi"))
	assertList(t, res("0", "2Gi"), l.Free(), "memory is counted once limited")

	require.NoError(t, l.SetLimits(corev1.ResourceList{corev1.ResourceMemory: resourceQ("8Gi")}))
	assert.Equal(t, []corev1.ResourceName{corev1.ResourceMemory}, l.Resources(), "cpu is no longer limited")
	admit(t, l, gold("c"), "1", at(3), res("100", "1Gi"))

	err := l.SetLimits(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "empty total")
	err = l.SetLimits(cpu("-1"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "negative quantity in total: cpu=-1")
	assert.Equal(t, []corev1.ResourceName{corev1.ResourceMemory}, l.Resources(), "a refused total changes nothing")
}

// Preemption turned on at run time: the waiting higher priority is
// decided again (woken) and then reclaims, with one reclaim reported;
// turned off, its victim's cap is lifted.
func TestSetPreemptionAtRunTime(t *testing.T) {
	l, spotW, goldW := priced(t, cpu("10"), false)
	var rec reclaims
	l.SetReclaimHook(rec.hook)
	l.ObserveSlice(slice("s1", "1", cpu("4"), inClass("spot"), consumer("c")))
	l.ObserveSlice(slice("s2", "1", cpu("4"), inClass("spot"), consumer("c")))
	refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	_, capped := l.Cap(key("s2"))
	require.False(t, capped, "no preemption yet")
	goldW.take()

	l.SetPreemption(true)
	assert.True(t, l.Preemption())
	assert.Equal(t, []string{"g1"}, goldW.take(), "the waiter is decided again")
	refused(t, []*ledger.Ledger{l}, goldAsk("g1", cpu("6")))
	got := rec.take()
	require.Len(t, got, 1, "one reclaim")
	assert.Equal(t, ledger.CausePriority, got[0].Cause)
	assert.Equal(t, 1, got[0].Slices, "one victim gives the 4 lacking")
	assertList(t, cpu("4"), got[0].Amount, "what the waiter lacked")
	assert.Equal(t, `reclaimed cpu 4 from 1 slice of lower priority for ns/g1 (priority 100, consumer "g")`, got[0].String())
	victims := spotW.take()
	require.Len(t, victims, 1)

	l.SetPreemption(false)
	_, capped1 := l.Cap(key("s1"))
	_, capped2 := l.Cap(key("s2"))
	assert.False(t, capped1 || capped2, "preemption off: the caps are lifted")
	assert.Equal(t, victims, spotW.take(), "the former victim is woken")
}

// SetConsumerLimits replaces the default and the overrides at once:
// consumers whose limit in force fell are shrunk (one reclaim each), those
// whose limit did not change are left alone, and removing the limits lifts
// the caps.
func TestSetConsumerLimitsReplacesAll(t *testing.T) {
	l, w := newLedger(t, cpu("20"))
	var rec reclaims
	l.SetReclaimHook(rec.hook)
	l.ObserveSlice(slice("a1", "1", cpu("4"), consumer("acme")))
	l.ObserveSlice(slice("g1", "1", cpu("4"), consumer("globex"), func(s *ledger.Slice) { s.Created = at(1) }))
	l.ObserveSlice(slice("g2", "1", cpu("4"), consumer("globex"), func(s *ledger.Slice) { s.Created = at(2) }))
	w.take()

	require.NoError(t, l.SetConsumerLimits(cpu("8"), map[string]corev1.ResourceList{"globex": cpu("0")}))
	assertList(t, cpu("8"), l.ConsumerLimit(), "the default")
	assert.Len(t, l.ConsumerLimits(), 1)
	_, acmeCapped := l.Cap(key("a1"))
	assert.False(t, acmeCapped, "acme holds 4 of its 8")
	for _, n := range []string{"g1", "g2"} {
		c, ok := l.Cap(key(n))
		require.True(t, ok, "%s shrunk", n)
		assertList(t, cpu("0"), c.Keep, n)
		assert.Equal(t, `budget pool reclaimed cpu 4 to 0 for consumer "globex"'s limit`, c.Message)
	}
	got := rec.take()
	require.Len(t, got, 1, "one reclaim for globex")
	assert.Equal(t, ledger.CauseConsumerLimit, got[0].Cause)
	assert.Equal(t, "globex", got[0].Consumer)
	assert.Equal(t, 2, got[0].Slices)
	assertList(t, cpu("8"), got[0].Amount, "all globex held")
	assert.ElementsMatch(t, []string{"g1", "g2"}, w.take())

	// The same limits again: nothing changes, nobody is woken.
	require.NoError(t, l.SetConsumerLimits(cpu("8"), map[string]corev1.ResourceList{"globex": cpu("0")}))
	assert.Empty(t, rec.take())
	assert.Empty(t, w.take())

	require.Error(t, l.SetConsumerLimits(cpu("8"), map[string]corev1.ResourceList{"": cpu("1")}))
	require.Error(t, l.SetConsumerLimits(cpu("-8"), nil))
	assert.Len(t, l.ConsumerLimits(), 1, "a refused call changes nothing")

	require.NoError(t, l.SetConsumerLimits(nil, nil))
	_, capped := l.Cap(key("g1"))
	assert.False(t, capped, "no limit: the caps are lifted")
	assert.Nil(t, l.ConsumerLimit())
	assert.Empty(t, l.ConsumerLimits())
}

// A total that falls below what is held, with preemption, is one reclaim
// reported.
func TestSmallerTotalIsOneReclaim(t *testing.T) {
	l, _, _ := priced(t, cpu("10"), true)
	var rec reclaims
	l.SetReclaimHook(rec.hook)
	l.ObserveSlice(slice("s1", "1", cpu("4"), inClass("spot"), consumer("c")))
	l.ObserveSlice(slice("s2", "1", cpu("4"), inClass("spot"), consumer("c")))
	require.NoError(t, l.SetTotal(cpu("5")))
	got := rec.take()
	require.Len(t, got, 1)
	assert.Equal(t, ledger.CauseTotal, got[0].Cause)
	assertList(t, cpu("3"), got[0].Amount, "what is held beyond the total")
	assert.Equal(t, "reclaimed cpu 3 from 1 slice: the total fell below what the slices held", got[0].String())
}

// SetEvictionAfter changes the delay EvictionsDue applies; ≤ 0 is none. A
// ledger that follows it at run time may evict whatever it is now.
func TestSetEvictionAfter(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	assert.Zero(t, l.EvictionAfter())
	assert.False(t, l.MayEvict())
	l.FollowEvictionAfter()
	assert.True(t, l.MayEvict(), "followed: its feed must be ready to evict")
	l.SetEvictionAfter(90e9)
	assert.Equal(t, "1m30s", l.EvictionAfter().String())
	l.SetEvictionAfter(-1)
	assert.Zero(t, l.EvictionAfter())
}

func resourceQ(q string) apiresource.Quantity { return apiresource.MustParse(q) }

// A ledger that follows EvictionAfter at run time: a slice shrunk while
// it is unset is evicted from once it is set (counting from the shrink),
// and nothing is named while it is unset.
func TestEvictionAfterSetLaterEvictsEarlierShrinks(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	l.FollowEvictionAfter()
	l.ObserveSlice(slice("s", "1", cpu("8"), consumer("globex")))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("8"))
	l.ObservePod(types.NamespacedName{Namespace: "o", Name: "p"}, "user-s", cpu("8"), ledger.PodMeta{UID: "uid-p"})
	require.NoError(t, l.SetConsumerLimits(nil, map[string]corev1.ResourceList{"globex": cpu("2")}))
	_, ok := l.Cap(key("s"))
	require.True(t, ok, "shrunk to 2")
	assert.Empty(t, l.EvictionsDue(time.Now().Add(time.Hour)), "no EvictionAfter yet: nothing is named")
	l.SetEvictionAfter(time.Minute)
	assert.Empty(t, l.EvictionsDue(time.Now()), "not before a minute after the shrink")
	assert.Equal(t, []string{"p"}, evicted(l.EvictionsDue(time.Now().Add(2*time.Minute))))
}
