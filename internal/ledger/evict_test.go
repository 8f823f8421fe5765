package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// evicted names the pods of evs.
func evicted(evs []ledger.Eviction) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Pod.Name)
	}
	return out
}

// spot holds 8 of 10 with three pods (4, 2 and 2 CPU, the 4 the oldest, and
// a memory-only pod the newest); gold asks 6 and spot is shrunk to 4.
// Nothing is named before EvictionAfter; then the newest pods that charge
// CPU go until the rest fit (2+2: the memory pod and the oldest stay), each
// once, and again only if still running after the retry delay.
func TestEvictionsDueNewestFirstOnlyWhatIsNeeded(t *testing.T) {
	l, err := ledger.New("pool", cpu("10"), ledger.Options{Preemption: true, EvictionAfter: time.Minute})
	require.NoError(t, err)
	require.NoError(t, l.Attach("spot", ledger.Class{Wake: (&wakes{}).wake, Priority: 0}))
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: (&wakes{}).wake, Priority: 100}))
	l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("spot")))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("8"))
	pod := func(name string, charge corev1.ResourceList, created time.Time) {
		l.ObservePod(types.NamespacedName{Namespace: "offloaded", Name: name}, "user-s", charge,
			ledger.PodMeta{UID: types.UID("uid-" + name), Created: created})
	}
	pod("old", cpu("4"), at(1))
	pod("mid", cpu("2"), at(2))
	pod("new", cpu("2"), at(3))
	pod("mem", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, at(4))
	assert.Empty(t, l.EvictionsDue(time.Now().Add(time.Hour)), "nothing is shrunk: nothing is due")

	refused(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
	c, ok := l.Cap(key("s"))
	require.True(t, ok)
	assertList(t, cpu("4"), c.Keep, "spot keeps 4")
	// Its class writes the smaller offer; Liqo shrinks its Quota.
	l.ObserveSlice(slice("s", "2", cpu("4"), inClass("spot"), consumer("spot")))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("4"))

	assert.Empty(t, l.EvictionsDue(time.Now()), "not before EvictionAfter")
	later := time.Now().Add(time.Minute + time.Second)
	evs := l.EvictionsDue(later)
	assert.Equal(t, []string{"new", "mid"}, evicted(evs), "the newest CPU pods, until 4 remain")
	require.Len(t, evs, 2)
	assert.Equal(t, key("s"), evs[0].Slice)
	assert.Equal(t, uid("s"), evs[0].SliceUID)
	assert.Equal(t, types.UID("uid-new"), evs[0].PodUID)
	assertList(t, cpu("2"), evs[0].Charge, "the pod's charge")
	assert.Contains(t, evs[0].Message, "budget pool: slice ns/s keeps cpu 4 and its pods used cpu 8 for 1m1s after it was shrunk")
	assert.Empty(t, l.EvictionsDue(later.Add(time.Second)), "each pod is named once")

	// One goes; the other is still running after the retry delay: named again.
	l.ForgetPod(types.NamespacedName{Namespace: "offloaded", Name: "new"})
	assert.Equal(t, []string{"mid"}, evicted(l.EvictionsDue(later.Add(31*time.Second))))

	// Both gone: spot's pods use 4, gold is admitted, the cap is lifted.
	l.ForgetPod(types.NamespacedName{Namespace: "offloaded", Name: "mid"})
	admitted(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
	_, ok = l.Cap(key("s"))
	assert.False(t, ok, "the waiter admitted: the cap is lifted")
	assert.Empty(t, l.EvictionsDue(later.Add(time.Hour)))
}

// Without EvictionAfter nothing is ever named, however long a shrunk
// slice's pods use more than it keeps.
func TestNoEvictionWithoutTheOption(t *testing.T) {
	l, _, _ := priced(t, cpu("10"), true)
	l.ObserveSlice(slice("s", "1", cpu("8"), inClass("spot"), consumer("spot")))
	l.ObserveQuota(key("s"), uid("s"), "qs", "user-s", cpu("8"))
	l.ObservePod(types.NamespacedName{Namespace: "o", Name: "p"}, "user-s", cpu("8"), ledger.PodMeta{})
	refused(t, []*ledger.Ledger{l}, goldAsk("g", cpu("6")))
	_, ok := l.Cap(key("s"))
	require.True(t, ok)
	assert.Empty(t, l.EvictionsDue(time.Now().Add(24*time.Hour)))
}
