package resourceslice

import (
	"encoding/json"
	"reflect"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
)

// The owned-field patch must mean what controller-runtime's
// MergeFromWithOptimisticLock means for two slices that differ only in owned
// fields: same keys, same values, same nulls.
func TestOwnedPatchMatchesMergeFrom(t *testing.T) {
	q := resource.MustParse
	base := func() *authv1beta1.ResourceSlice {
		rs := &authv1beta1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"x": "y"}},
			Spec:       authv1beta1.ResourceSliceSpec{Class: "gold", CSR: []byte("csr")},
			Status:     authv1beta1.ResourceSliceStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: []byte("crt")}},
		}
		conditions.Set(rs, conditions.Authentication, conditions.Accepted, "Authenticated", "")
		return rs
	}
	decided := func() *authv1beta1.ResourceSlice {
		rs := base()
		rs.Status.Resources = corev1.ResourceList{"cpu": q("2"), "memory": q("4Gi")}
		rs.Status.NodeLabels = map[string]string{"tier": "gold", "zone": "a"}
		rs.Status.NodeSelector = map[string]string{"pool": "p1"}
		rs.Status.StorageClasses = []liqov1beta1.StorageType{{StorageClassName: "fast", Default: true}}
		rs.Status.IngressClasses = []liqov1beta1.IngressType{{IngressClassName: "nginx"}}
		rs.Status.LoadBalancerClasses = []liqov1beta1.LoadBalancerType{{LoadBalancerClassName: "metallb"}}
		conditions.Accept(rs, "Granted", "")
		return rs
	}
	cases := map[string]struct {
		reason string
		from   *authv1beta1.ResourceSlice
		to     func(rs *authv1beta1.ResourceSlice)
	}{
		"FirstDecision": {reason: "every owned field appears", from: base(), to: func(rs *authv1beta1.ResourceSlice) {
			d := decided()
			rs.Status = d.Status
		}},
		"Shrink": {reason: "keys removed from maps, a list emptied, a list changed", from: decided(), to: func(rs *authv1beta1.ResourceSlice) {
			rs.Status.Resources = corev1.ResourceList{"cpu": q("1")}
			rs.Status.NodeLabels = map[string]string{"tier": "silver", "new": "v"}
			rs.Status.StorageClasses = nil
			rs.Status.IngressClasses = []liqov1beta1.IngressType{{IngressClassName: "traefik"}}
		}},
		"DenyAndClear": {reason: "everything emptied and the condition flipped", from: decided(), to: func(rs *authv1beta1.ResourceSlice) {
			rs.Status.Resources, rs.Status.NodeLabels, rs.Status.NodeSelector = nil, nil, map[string]string{}
			rs.Status.StorageClasses, rs.Status.IngressClasses, rs.Status.LoadBalancerClasses = nil, nil, nil
			conditions.Deny(rs, "Full", "no capacity")
		}},
		"ReasonOnly": {reason: "only the condition's reason changes", from: decided(), to: func(rs *authv1beta1.ResourceSlice) {
			conditions.Accept(rs, "Regranted", "")
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			to := tc.from.DeepCopy()
			tc.to(to)
			got, err := ownedPatch{from: tc.from}.Data(to)
			if err != nil {
				t.Fatal(err)
			}
			want, err := client.MergeFromWithOptions(tc.from, client.MergeFromWithOptimisticLock{}).Data(to)
			if err != nil {
				t.Fatal(err)
			}
			var g, w map[string]any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s\nowned patch:      %s\nMergeFrom patch: %s", tc.reason, got, want)
			}
		})
	}
}

func TestOwnedPatchNeedsAResourceVersion(t *testing.T) {
	if _, err := (ownedPatch{from: &authv1beta1.ResourceSlice{}}).Data(&authv1beta1.ResourceSlice{}); err == nil {
		t.Error("a patch without the resourceVersion would not be optimistic: want an error")
	}
	if _, err := (ownedPatch{from: &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"}}}).Data(&corev1.Pod{}); err == nil {
		t.Error("want an error for an object that is not a ResourceSlice")
	}
}
