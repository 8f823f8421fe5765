package resourceslice

import (
	"bytes"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

// BenchmarkStatusPatch measures building the body of a first decision's
// status write for a slice as the API server returns it (CSR, certificates,
// managedFields): the SDK's owned-field patch against controller-runtime's
// MergeFromWithOptimisticLock over the same two objects, the baseline.
func BenchmarkStatusPatch(b *testing.B) {
	current, desired := realisticPair()
	benchPatches(b, current, desired)
}

func benchPatches(b *testing.B, current, desired *authv1beta1.ResourceSlice) {
	for _, p := range []struct {
		name  string
		patch client.Patch
	}{
		{"owned", ownedPatch{from: current}},
		{"mergeFromBaseline", client.MergeFromWithOptions(current, client.MergeFromWithOptimisticLock{})},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				data, err := p.patch.Data(desired)
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size), "patch-bytes")
		})
	}
}

// fieldsJSON is a managedFields entry's field set with n fields.
func fieldsJSON(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"f:spec":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"f:field%d":{}`, i)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

// realisticPair is a slice as the API server returns it (CSR,
// certificates, managedFields, Liqo's Authentication condition) and the
// same slice with a first decision.
func realisticPair() (current, desired *authv1beta1.ResourceSlice) {
	current = &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "42",
			Labels:        map[string]string{labelOriginID: "consumer", labelReplicated: "true"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "liqo", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: fieldsJSON(40)}}}},
		Spec: authv1beta1.ResourceSliceSpec{Class: "gold", CSR: bytes.Repeat([]byte("C"), 1024),
			Resources: corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("8Gi")}},
		Status: authv1beta1.ResourceSliceStatus{AuthParams: &authv1beta1.AuthParams{
			SignedCRT: bytes.Repeat([]byte("S"), 1200), CA: bytes.Repeat([]byte("A"), 800), APIServer: "https://provider:6443"}},
	}
	sliceconds.Set(current, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "Authenticated", "")
	desired = current.DeepCopy()
	desired.Status.Resources = desired.Spec.Resources.DeepCopy()
	conditions.Accept(desired, "Granted", "granted as requested")
	return current, desired
}
