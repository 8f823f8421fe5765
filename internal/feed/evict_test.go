package feed

import (
	"context"
	"strings"
	"testing"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// The evictor's deletions on a real API server (budget.WithEvictionAfter):
// a pod recreated under the same name since the ledger saw it is not
// deleted (the UID precondition) and nothing is said; the pod the ledger
// saw is deleted with an Evicted Warning on its slice; a deletion the
// server refuses (here: a role without delete on shadowpods) is an
// EvictionFailed Warning naming the permission, and the pod stays.
func TestEvictDeletesOnlyThePodTheLedgerSaw(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	const ns = "evict-offloaded"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	pod := &offloadingv1beta1.ShadowPod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"liqo.io/creator-user": "user-s"}},
		Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
		}}}},
	}
	require.NoError(t, cp.Client.Create(ctx, pod))
	l, err := ledger.New("pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
	require.NoError(t, err)
	rec := events.NewFakeRecorder(10)
	ev := func(uid types.UID) ledger.Eviction {
		return ledger.Eviction{
			Pod: client.ObjectKeyFromObject(pod), PodUID: uid, Charge: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Slice: types.NamespacedName{Namespace: "tenant", Name: "s"}, SliceUID: "uid-s",
			Message: "budget pool: slice tenant/s keeps cpu 4",
		}
	}
	exists := func() bool {
		err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), &offloadingv1beta1.ShadowPod{})
		require.True(t, err == nil || apierrors.IsNotFound(err), "reading the pod: %v", err)
		return err == nil
	}
	said := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}

	admin := evictor{l: l, writer: cp.Client, recorder: func() events.EventRecorder { return rec }}
	admin.evict(ctx, rec, ev("uid-of-an-earlier-pod-by-that-name"))
	assert.True(t, exists(), "a pod by that name but another UID is not the one the ledger saw: kept")
	assert.Empty(t, said(), "nothing is said of a pod not deleted for a reason the watch will tell")

	cfg, err := cp.AddUser("no-delete")
	require.NoError(t, err)
	weak, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	refused := evictor{l: l, writer: weak, recorder: func() events.EventRecorder { return rec }}
	refused.evict(ctx, rec, ev(pod.UID))
	assert.True(t, exists(), "the server refused the deletion: the pod runs")
	got := said()
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], "Warning EvictionFailed cannot delete ShadowPod evict-offloaded/p: "), got[0])
	assert.Contains(t, got[0], "forbidden")
	assert.Contains(t, got[0], "needs delete on shadowpods.offloading.liqo.io")

	admin.evict(ctx, rec, ev(pod.UID))
	assert.False(t, exists(), "the pod the ledger saw is deleted")
	got = said()
	require.Len(t, got, 1)
	assert.Equal(t, "Warning Evicted deleted ShadowPod evict-offloaded/p (cpu 2); budget pool: slice tenant/s keeps cpu 4", got[0])
}
