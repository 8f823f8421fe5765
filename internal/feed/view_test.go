package feed

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// The status.class view keeps of a slice only what sliceview.View lists (issue
// 29: one view per slice of the cluster, beside the typed slice cache).
// Decoded as the view's cache decodes it and trimmed, a slice carrying
// everything Liqo and others set (CSR, certificates, conditions,
// annotations, owner references, finalizers, managed fields, a deletion
// timestamp) keeps its name, namespace, labels, classes and what a budget
// counts; and a budget observes from the view what it observes from the
// typed slice.
func TestClassViewKeepsOnlyWhatItNeeds(t *testing.T) {
	meta := map[string]any{
		"name": "s", "namespace": "tenant-a", "uid": "uid-1", "resourceVersion": "42",
		"creationTimestamp": "2026-11-25T10:00:00Z", "labels": map[string]any{"liqo.io/originID": "consumer-a"},
	}
	grant := map[string]any{"cpu": "4", "memory": "8Gi"}
	cases := []struct {
		reason string
		// resources is the slice's Resources condition; nil for none.
		resources  *authv1beta1.ResourceSliceCondition
		wantStatus map[string]any
	}{
		{
			reason:    "Accepted: the condition, without its reason, and the grant",
			resources: &authv1beta1.ResourceSliceCondition{Status: authv1beta1.ResourceSliceConditionAccepted, Reason: "Granted", Message: "granted"},
			wantStatus: map[string]any{"class": "gold", "resources": grant,
				"conditions": []any{map[string]any{"type": "Resources", "status": "Accepted"}}},
		},
		{
			reason:    "Accepted by a reclaim's shrink: the reason Reclaimed too",
			resources: &authv1beta1.ResourceSliceCondition{Status: authv1beta1.ResourceSliceConditionAccepted, Reason: ledger.ReasonReclaimed},
			wantStatus: map[string]any{"class": "gold", "resources": grant,
				"conditions": []any{map[string]any{"type": "Resources", "status": "Accepted", "reason": ledger.ReasonReclaimed}}},
		},
		{
			reason:     "Denied: neither the condition nor the grant",
			resources:  &authv1beta1.ResourceSliceCondition{Status: authv1beta1.ResourceSliceConditionDenied, Reason: "NoCapacity"},
			wantStatus: map[string]any{"class": "gold"},
		},
		{
			reason:     "undecided: status.class alone",
			wantStatus: map[string]any{"class": "gold"},
		},
	}
	decoder := serializer.NewCodecFactory(sliceview.ViewScheme()).UniversalDeserializer()
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			rs := fullSlice(tc.resources)
			obj, _, err := decoder.Decode(sliceJSON(t, rs, "gold"), nil, nil)
			require.NoError(t, err)
			trimmed, err := sliceview.Trim(obj)
			require.NoError(t, err)
			view, ok := trimmed.(*sliceview.View)
			require.True(t, ok, "Trim returned a %T", trimmed)

			raw, err := json.Marshal(view)
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal(raw, &got))
			want := map[string]any{"metadata": meta, "spec": map[string]any{"class": "silver"}, "status": tc.wantStatus}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the view, as JSON, -want +got:\n%s", diff)
			}

			typed := Observation(rs, "gold", "consumer-a") // the pinned types drop status.class
			if diff := cmp.Diff(typed, viewObservation(view, "consumer-a")); diff != "" {
				t.Errorf("a budget's observation, from the typed slice (-) and from the view (+):\n%s", diff)
			}
		})
	}

	// A grant that is no ResourceList fails to decode, as in the typed cache.
	var bad map[string]any
	require.NoError(t, json.Unmarshal(sliceJSON(t, fullSlice(cases[0].resources), "gold"), &bad))
	bad["status"].(map[string]any)["resources"] = map[string]any{"cpu": "lots"}
	raw, err := json.Marshal(bad)
	require.NoError(t, err)
	_, _, err = decoder.Decode(raw, nil, nil)
	assert.Error(t, err, "a view whose status.resources does not decode")
}

// fullSlice is slice tenant-a/s of spec.class silver with everything Liqo
// and other writers set, and the Resources condition resources (none when
// nil).
func fullSlice(resources *authv1beta1.ResourceSliceCondition) *authv1beta1.ResourceSlice {
	deleting := metav1.NewTime(time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC))
	rs := &authv1beta1.ResourceSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: "s", Namespace: "tenant-a", UID: "uid-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)),
			DeletionTimestamp: &deleting,
			Labels:            map[string]string{"liqo.io/originID": "consumer-a"},
			Annotations:       map[string]string{"note": "kept by nobody"},
			Finalizers:        []string{"liqo.io/finalizer"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner"}},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "liqo", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: authv1beta1.ResourceSliceSpec{
			Class:     "silver",
			CSR:       []byte("certificate signing request"),
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		},
		Status: authv1beta1.ResourceSliceStatus{
			AuthParams: &authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: []byte("crt")},
			Conditions: []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeAuthentication,
				Status: authv1beta1.ResourceSliceConditionAccepted, Reason: "Authenticated", Message: "ok"}},
		},
	}
	if resources != nil {
		c := *resources
		c.Type = authv1beta1.ResourceSliceConditionTypeResources
		c.LastTransitionTime = rs.CreationTimestamp
		rs.Status.Conditions = append(rs.Status.Conditions, c)
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	}
	return rs
}

// sliceJSON is rs as the API server sends it, with status.class set to
// class (which the pinned types lack).
func sliceJSON(t *testing.T, rs *authv1beta1.ResourceSlice, class string) []byte {
	t.Helper()
	raw, err := json.Marshal(rs)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	m["status"].(map[string]any)["class"] = class
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	return raw
}
