package feed

import (
	"context"
	"testing"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// Two budgets read the set's one ShadowPod watch, attached as their feeds
// attach them, on a real API server: each keeps only the pods of the user
// its own slice's Quota names (not those of the other budget's slice,
// whose Quota it sees too), whether a pod came before the Quota (read from
// the watch's index) or after (its event), and counts them as it would
// all of them; an ended pod counts nothing.
func TestBudgetsOfOneWatchKeepOnlyTheirUsersPods(t *testing.T) {
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := "pods-by-user"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	pod := func(name, user, cpu string) *offloadingv1beta1.ShadowPod {
		return &offloadingv1beta1.ShadowPod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{labelCreatorUser: user}},
			Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
			}}}},
		}
	}
	// Before any Quota: two of a's, one of b's, one of a user of neither.
	for _, p := range []*offloadingv1beta1.ShadowPod{pod("a1", "user-a", "1"), pod("a2", "user-a", "2"),
		pod("b1", "user-b", "4"), pod("n1", "user-n", "8")} {
		require.NoError(t, cp.Client.Create(ctx, p))
	}

	mgr, err := manager.New(cp.Config, envkit.ManagerOptions(t, cp.Scheme))
	require.NoError(t, err)
	pods, err := NewPods(mgr)
	require.NoError(t, err)
	go func() { _ = mgr.Start(ctx) }()

	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	// Each budget serves a class of its own; each sees both slices and
	// both Quotas, as every budget of a set does.
	var ledgers []*ledger.Ledger
	budget := func(name string) *ledger.Ledger {
		l, err := ledger.New(name, cpu("100"))
		require.NoError(t, err)
		require.NoError(t, l.Attach("class-"+name, ledger.Class{}))
		synced, detach, err := pods.attach(ctx, l)
		require.NoError(t, err)
		t.Cleanup(detach)
		require.Eventually(t, synced, testwait.Timeout, 10*time.Millisecond, "the watch's initial list delivered")
		ledgers = append(ledgers, l)
		return l
	}
	a, b := budget("a"), budget("b")
	for _, l := range ledgers {
		for _, name := range []string{"a", "b"} {
			user := "user-" + name
			slice := types.NamespacedName{Namespace: ns, Name: "slice-" + user}
			l.ObserveSlice(ledger.Slice{Key: slice, UID: types.UID(user), RV: "1", Class: "class-" + name, Accepted: true, Grant: cpu("1")})
			l.ObserveQuota(slice, types.UID(user), "quota-"+user, user, cpu("1"))
		}
	}
	assert.Equal(t, 1, pods.Builds(), "one watch for both budgets")
	inUse := func(l *ledger.Ledger, user string) string {
		used := l.InUse(types.NamespacedName{Namespace: ns, Name: "slice-" + user})
		return used.Cpu().String()
	}
	require.Eventually(t, func() bool { return inUse(a, "user-a") == "3" && inUse(b, "user-b") == "4" },
		testwait.Timeout, 20*time.Millisecond, "each budget counts its user's pods: a %s, b %s", inUse(a, "user-a"), inUse(b, "user-b"))
	assert.Equal(t, 2, a.KeptPods(), "a keeps a's two pods only")
	assert.Equal(t, 1, b.KeptPods(), "b keeps b's one pod only")

	// After the Quotas: a watched pod of a's, and one of b's that ends.
	require.NoError(t, cp.Client.Create(ctx, pod("a3", "user-a", "16")))
	b2 := pod("b2", "user-b", "32")
	require.NoError(t, cp.Client.Create(ctx, b2))
	require.Eventually(t, func() bool { return inUse(a, "user-a") == "19" && inUse(b, "user-b") == "36" },
		testwait.Timeout, 20*time.Millisecond, "watched pods: a %s, b %s", inUse(a, "user-a"), inUse(b, "user-b"))
	b2.Status.Phase = corev1.PodSucceeded
	require.NoError(t, cp.Client.Status().Update(ctx, b2))
	require.Eventually(t, func() bool { return inUse(b, "user-b") == "4" }, testwait.Timeout, 20*time.Millisecond,
		"an ended pod counts nothing: b %s", inUse(b, "user-b"))
	assert.Equal(t, 3, a.KeptPods())
	assert.Equal(t, 1, b.KeptPods())
}
