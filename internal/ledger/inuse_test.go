package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

func podKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "offloaded", Name: name}
}

// A smaller grant frees capacity only as the consumer's pods end: x holds 8
// of 10, its two pods of 4 run, and it is accepted again with 2 (Liqo
// shrinks its Quota to 2); y's 6 waits until a pod ends, then fits.
func TestShrunkGrantFreesAsPodsEnd(t *testing.T) {
	l, w := newLedger(t, cpu("10"))
	l.ObserveSlice(slice("x", "1", cpu("8")))
	l.ObserveQuota(key("x"), uid("x"), "qx", "user-x", cpu("8"))
	l.ObservePod(podKey("p1"), "user-x", cpu("4"), ledger.PodMeta{})
	l.ObservePod(podKey("p2"), "user-x", cpu("4"), ledger.PodMeta{})
	l.ObservePod(podKey("other"), "user-of-no-slice", cpu("3"), ledger.PodMeta{})
	assertList(t, cpu("8"), l.Used(), "x holds its grant, its Quota and its pods' 8")

	l.ObserveSlice(slice("x", "2", cpu("2")))
	l.ObserveQuota(key("x"), uid("x"), "qx", "user-x", cpu("2"))
	assertList(t, cpu("8"), l.Used(), "the pods still run: the smaller grant frees nothing yet")
	assertList(t, cpu("8"), l.InUse(key("x")), "in use")
	r := refused(t, []*ledger.Ledger{l}, request("y", "", at(1), cpu("6")))
	assert.Equal(t, "budget pool: cpu: asked 6, waits until 6 is free", r.Message)
	w.take()

	l.ForgetPod(podKey("p1"))
	assertList(t, cpu("4"), l.Used(), "a pod ended: 4 in use")
	assert.Contains(t, w.take(), "y", "the waiter is woken")
	admitted(t, []*ledger.Ledger{l}, request("y", "", at(1), cpu("6")))
	assertList(t, cpu("10"), l.Used(), "x's 4 in use and y's 6")
}

// In use is never capped at the grant: pods beyond it (a provider that
// turned Liqo's enforcement off) take the capacity all the same.
func TestInUseBeyondTheGrantCounts(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	l.ObserveSlice(slice("x", "1", cpu("2")))
	l.ObserveQuota(key("x"), uid("x"), "qx", "user-x", cpu("2"))
	l.ObservePod(podKey("p1"), "user-x", cpu("5"), ledger.PodMeta{})
	assertList(t, cpu("5"), l.Used(), "5 in use on a grant of 2")
	assertList(t, cpu("5"), l.InUseTotal(), "in use")
	assertList(t, cpu("3"), l.OverGrant(), "3 beyond the grant")
	l.ForgetSlice(key("x"), uid("x"))
	assertList(t, cpu("0"), l.Used(), "a deleted slice holds nothing, its pods included")
}

// PodCharge charges as Liqo's ShadowPod webhook does.
func TestPodCharge(t *testing.T) {
	req := func(cpuQ, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpuQ), corev1.ResourceMemory: resource.MustParse(mem)}}
	}
	spec := &corev1.PodSpec{
		Containers:     []corev1.Container{{Resources: req("1", "1Gi")}, {Resources: req("500m", "2Gi")}},
		InitContainers: []corev1.Container{{Resources: req("2", "1Gi")}, {Resources: req("1", "512Mi")}},
	}
	got := ledger.PodCharge(spec)
	require.Len(t, got, 2)
	c, m := got[corev1.ResourceCPU], got[corev1.ResourceMemory]
	assert.Equal(t, "2", c.String(), "the largest init container's CPU beats the containers' 1500m")
	assert.Equal(t, "3Gi", m.String(), "the containers' memory sum beats any init container")
}

// With a pod index (a set's one ShadowPod watch), a budget keeps only the
// pods of the users its slices' Quotas name: another budget's pods are
// not kept, a user's pods are read from the index when a Quota first
// names it, and dropped when none does any more; counting is as without.
func TestPodIndexKeepsOnlyOwnUsersPods(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	index := map[string][]ledger.RunningPod{}
	asked := 0
	unset := l.SetPodIndex(func(user string) []ledger.RunningPod { asked++; return index[user] })

	// Pods of a user no Quota names yet: not kept, not counted.
	index["user-x"] = []ledger.RunningPod{{Key: podKey("p1"), Charge: cpu("3")}, {Key: podKey("p2"), Charge: cpu("2")}}
	l.ObservePod(podKey("p1"), "user-x", cpu("3"), ledger.PodMeta{})
	l.ObservePod(podKey("p2"), "user-x", cpu("2"), ledger.PodMeta{})
	l.ObservePod(podKey("elsewhere"), "user-of-another-budget", cpu("4"), ledger.PodMeta{})
	assert.Equal(t, 0, l.KeptPods(), "no Quota of this budget names their users")

	// x's Quota names user-x: its pods are read from the index, once.
	l.ObserveSlice(slice("x", "1", cpu("1")))
	l.ObserveQuota(key("x"), uid("x"), "qx", "user-x", cpu("1"))
	assert.Equal(t, 1, asked, "the index is read once, when the user is first named")
	assert.Equal(t, 2, l.KeptPods())
	assertList(t, cpu("5"), l.InUse(key("x")), "x's user's pods, read from the index")
	assertList(t, cpu("5"), l.Used(), "x holds what its pods use")

	// Events go on as without an index: observed again, ended, a new one.
	l.ObservePod(podKey("p1"), "user-x", cpu("3"), ledger.PodMeta{})
	l.ForgetPod(podKey("p2"))
	l.ObservePod(podKey("p3"), "user-x", cpu("1"), ledger.PodMeta{})
	assertList(t, cpu("4"), l.InUse(key("x")), "p1 and p3")
	l.ObserveQuota(key("x"), uid("x"), "qx2", "user-x", cpu("1"))
	assert.Equal(t, 1, asked, "a second Quota of a named user reads nothing")

	// A pod whose label moves to a user no Quota names is forgotten.
	l.ObservePod(podKey("p3"), "user-of-another-budget", cpu("1"), ledger.PodMeta{})
	assertList(t, cpu("3"), l.InUse(key("x")), "p1")

	// No Quota names user-x any more: its pods are dropped.
	l.ForgetQuota(key("x"), "qx")
	assert.Equal(t, 1, l.KeptPods(), "qx2 still names user-x")
	l.ForgetQuota(key("x"), "qx2")
	assert.Equal(t, 0, l.KeptPods(), "no Quota names user-x")
	assertList(t, cpu("1"), l.Used(), "x holds its grant")

	// Unset, the ledger keeps every pod observed again, as before.
	unset()
	l.ObservePod(podKey("elsewhere"), "user-of-another-budget", cpu("4"), ledger.PodMeta{})
	assert.Equal(t, 1, l.KeptPods())
}

// Setting an index replaces the pods kept so far with what it lists of
// the users whose pods are kept (a feed that joins a watch late reads what
// it missed), and drops the others; a later index is not unset by an
// earlier one's unset.
func TestSetPodIndexReplacesWhatWasKept(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	l.ObserveSlice(slice("x", "1", cpu("1")))
	l.ObserveQuota(key("x"), uid("x"), "qx", "user-x", cpu("1"))
	l.ObservePod(podKey("mine"), "user-x", cpu("2"), ledger.PodMeta{})
	l.ObservePod(podKey("ended"), "user-x", cpu("1"), ledger.PodMeta{})
	l.ObservePod(podKey("theirs"), "user-y", cpu("2"), ledger.PodMeta{})
	require.Equal(t, 3, l.KeptPods())
	listed := func(user string) []ledger.RunningPod {
		if user == "user-x" {
			return []ledger.RunningPod{{Key: podKey("mine"), Charge: cpu("2")}, {Key: podKey("missed"), Charge: cpu("4")}}
		}
		return nil
	}
	first := l.SetPodIndex(listed)
	assert.Equal(t, 2, l.KeptPods(), "user-x's pods as the index lists them; user-y's dropped")
	assertList(t, cpu("6"), l.InUse(key("x")), "mine and missed")
	l.SetPodIndex(listed)
	first()
	l.ObservePod(podKey("theirs"), "user-y", cpu("2"), ledger.PodMeta{})
	assert.Equal(t, 2, l.KeptPods(), "the later index still filters")
}
