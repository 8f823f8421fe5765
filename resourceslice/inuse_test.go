package resourceslice

import (
	"encoding/json"
	"testing"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// A ShadowPod decoded as the SDK's cache decodes it is charged what the
// whole one is (containers summed, the largest init container's if
// larger, as Liqo's webhook charges), and keeps what eviction needs, and
// nothing else; so is each item of a list.
func TestShadowPodDecodedKeepsTheCharge(t *testing.T) {
	q := resource.MustParse
	created := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	sp := &offloadingv1beta1.ShadowPod{
		TypeMeta: metav1.TypeMeta{APIVersion: offloadingv1beta1.SchemeGroupVersion.String(), Kind: "ShadowPod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "p", UID: "u1", ResourceVersion: "7", CreationTimestamp: created,
			Labels:        map[string]string{labelCreatorUser: "user-x", "app": "shop"},
			Annotations:   map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "virtual-kubelet", Operation: metav1.ManagedFieldsOperationApply}}},
		Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "app", Image: "app", Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
						Limits: corev1.ResourceList{corev1.ResourceCPU: q("4")}}},
				{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}},
			},
			InitContainers: []corev1.Container{
				{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}}},
			},
		}},
		Status: offloadingv1beta1.ShadowPodStatus{Phase: corev1.PodRunning},
	}
	decoder := serializer.NewCodecFactory(shadowPodScheme()).UniversalDeserializer()
	data, err := json.Marshal(sp)
	require.NoError(t, err)
	out, _, err := decoder.Decode(data, nil, nil)
	require.NoError(t, err)
	kept, ok := out.(*shadowPodCharge)
	require.True(t, ok, "the cache decodes a shadowPodCharge, not the ShadowPod: %T", out)
	want := ledger.PodCharge(&sp.Spec.Pod)
	assert.Equal(t, "1500m", want.Cpu().String(), "the fixture: containers summed")
	assert.Equal(t, "2Gi", want.Memory().String(), "the fixture: the init container's memory is larger")
	assert.Equal(t, want, kept.Charge, "charged as the whole pod")
	assert.Equal(t, "user-x", kept.User)
	assert.Empty(t, kept.Labels)
	assert.Empty(t, kept.Annotations)
	assert.Empty(t, kept.ManagedFields)
	assert.Equal(t, "p", kept.Name)
	assert.Equal(t, "o", kept.Namespace)
	assert.Equal(t, "7", kept.ResourceVersion)
	assert.Equal(t, sp.UID, kept.UID)
	assert.True(t, created.Equal(&kept.CreationTimestamp), "created %v, kept %v", created, kept.CreationTimestamp)
	assert.Equal(t, corev1.PodRunning, kept.Phase)
	copied := kept.DeepCopyObject().(*shadowPodCharge)
	copied.Charge[corev1.ResourceCPU] = resource.MustParse("9")
	assert.Equal(t, "1500m", kept.Charge.Cpu().String(), "a deep copy shares no map")

	ended := sp.DeepCopy()
	ended.Name, ended.Labels, ended.Status.Phase = "q", nil, corev1.PodSucceeded
	list := &offloadingv1beta1.ShadowPodList{
		TypeMeta: metav1.TypeMeta{APIVersion: offloadingv1beta1.SchemeGroupVersion.String(), Kind: "ShadowPodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items:    []offloadingv1beta1.ShadowPod{*sp, *ended},
	}
	data, err = json.Marshal(list)
	require.NoError(t, err)
	out, _, err = decoder.Decode(data, nil, nil)
	require.NoError(t, err)
	items, ok := out.(*shadowPodChargeList)
	require.True(t, ok, "a list decodes as shadowPodChargeList: %T", out)
	assert.Equal(t, "9", items.ResourceVersion)
	require.Len(t, items.Items, 2)
	assert.Equal(t, want, items.Items[0].Charge)
	assert.Equal(t, "q", items.Items[1].Name)
	assert.Empty(t, items.Items[1].User, "no creator label: charged to no Quota")
	assert.Equal(t, corev1.PodSucceeded, items.Items[1].Phase)
}
