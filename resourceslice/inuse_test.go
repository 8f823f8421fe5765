package resourceslice

import (
	"testing"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// The trimmed ShadowPod is charged what the whole one is (containers
// summed, the largest init container's if larger, as Liqo's webhook
// charges), and keeps what eviction needs, and nothing else.
func TestTrimShadowPodKeepsTheCharge(t *testing.T) {
	q := resource.MustParse
	created := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	sp := &offloadingv1beta1.ShadowPod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "p", UID: "u1", ResourceVersion: "7", CreationTimestamp: created,
			Labels:      map[string]string{labelCreatorUser: "user-x", "app": "shop"},
			Annotations: map[string]string{"a": "b"}},
		Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "app", Image: "app", Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}}},
				{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}},
			},
			InitContainers: []corev1.Container{
				{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}}},
			},
		}},
		Status: offloadingv1beta1.ShadowPodStatus{Phase: corev1.PodRunning},
	}
	out, err := trimShadowPod(sp)
	require.NoError(t, err)
	kept, ok := out.(*shadowPodCharge)
	require.True(t, ok, "the cache keeps a shadowPodCharge, not the ShadowPod")
	want := ledger.PodCharge(&sp.Spec.Pod)
	assert.Equal(t, "1500m", want.Cpu().String(), "the fixture: containers summed")
	assert.Equal(t, "2Gi", want.Memory().String(), "the fixture: the init container's memory is larger")
	assert.Equal(t, want, kept.Charge, "charged as the whole pod")
	assert.Equal(t, "user-x", kept.User)
	assert.Empty(t, kept.Labels)
	assert.Empty(t, kept.Annotations)
	assert.Equal(t, sp.UID, kept.UID)
	assert.Equal(t, created, kept.CreationTimestamp)
	assert.Equal(t, corev1.PodRunning, kept.Phase)
	copied := kept.DeepCopyObject().(*shadowPodCharge)
	copied.Charge[corev1.ResourceCPU] = resource.MustParse("9")
	assert.Equal(t, "1500m", kept.Charge.Cpu().String(), "a deep copy shares no map")

	other, err := trimShadowPod(&corev1.Pod{})
	require.NoError(t, err)
	assert.IsType(t, &corev1.Pod{}, other, "another type passes through")
}
