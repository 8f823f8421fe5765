package resourceslice

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// Tests of the status write (status.go) that need its unexported parts:
// the ownership table, the patch and the writer. The tests through the
// harness are in status_test.go (package resourceslice_test, which the
// harness imports: an internal test cannot import it).

// TestEveryStatusFieldHasAnOwner walks every JSON field of
// ResourceSliceStatus: each must be declared in statusFields, as ours, as
// Liqo's, or shared. When Liqo adds a status field (status.class is coming),
// this fails until someone decides who owns it; otherwise it would silently
// be neither saved nor reported.
func TestEveryStatusFieldHasAnOwner(t *testing.T) {
	declared := map[string]statusField{}
	for _, f := range statusFields {
		require.NotContains(t, declared, f.json, "status.%s declared twice", f.json)
		declared[f.json] = f
	}
	typ := reflect.TypeOf(authv1beta1.ResourceSliceStatus{})
	seen := map[string]bool{}
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		require.NotEmpty(t, name, "field %s has no JSON name", typ.Field(i).Name)
		seen[name] = true
		f, ok := declared[name]
		if !assert.True(t, ok, "status.%s has no owner in statusFields: declare it ours (copy, compare, patch) or Liqo's (compare)", name) {
			continue
		}
		assert.True(t, f.ours != nil || f.theirs != nil, "status.%s is declared but owned by nobody", name)
		if f.ours != nil {
			assert.NotNil(t, f.copy, "status.%s is ours but has no copy", name)
			assert.NotNil(t, f.patch, "status.%s is ours but has no patch", name)
		}
	}
	for name := range declared {
		assert.True(t, seen[name], "statusFields declares status.%s, which ResourceSliceStatus does not have", name)
	}
}

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
		sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "Authenticated", "")
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

// The status writer, through the manager's client as AddToManager wires
// it, leaves the slice it patched equal to what the API server then holds
// (Liqo's condition and authParams included, the new resourceVersion the
// ledger settles lost answers by), records the class's field manager, and
// reports conflicts and gone slices as the API server answers them.
func TestStatusWriterMatchesTheServer(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	ns := "status-writer"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	rs := &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns, Labels: map[string]string{"liqo.io/replicated": "true"}},
		Spec:       authv1beta1.ResourceSliceSpec{Class: "gold", Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
	}
	if err := cp.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	// Liqo's writes: the Authentication condition and authParams.
	sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "Authenticated", "")
	rs.Status.AuthParams = &authv1beta1.AuthParams{SignedCRT: []byte("crt")}
	if err := cp.Client.Status().Update(ctx, rs); err != nil {
		t.Fatal(err)
	}

	mgr, err := manager.New(cp.Config, envkit.ManagerOptions(t, cp.Scheme))
	if err != nil {
		t.Fatal(err)
	}
	current := &authv1beta1.ResourceSlice{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), current); err != nil {
		t.Fatal(err)
	}
	desired := current.DeepCopy()
	desired.Status.Resources = desired.Spec.Resources.DeepCopy()
	conditions.Accept(desired, "Granted", "granted as requested")
	settleTransitionTime(current, desired)
	if err := writeStatus(ctx, mgr.GetClient(), current, desired, client.FieldOwner(fieldManager("gold"))); err != nil {
		t.Fatalf("writeStatus: %v", err)
	}
	server := &authv1beta1.ResourceSlice{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), server); err != nil {
		t.Fatal(err)
	}
	if desired.ResourceVersion == current.ResourceVersion {
		t.Errorf("the written slice kept the resourceVersion it was read at (%s)", current.ResourceVersion)
	}
	if d := cmp.Diff(server, desired); d != "" {
		t.Errorf("the written slice is not what the server holds (-server +written):\n%s", d)
	}
	var owners []string
	for _, m := range server.ManagedFields {
		if m.Subresource == "status" {
			owners = append(owners, m.Manager)
		}
	}
	if !slices.Contains(owners, fieldManager("gold")) {
		t.Errorf("status field managers = %v, want %s among them", owners, fieldManager("gold"))
	}

	// A patch computed from the slice as it was before is refused.
	stale := current.DeepCopy()
	conditions.Deny(stale, "Late", "")
	err = writeStatus(ctx, mgr.GetClient(), current, stale, client.FieldOwner(fieldManager("gold")))
	if !apierrors.IsConflict(err) {
		t.Errorf("a patch at an old resourceVersion: err = %v, want a conflict", err)
	}

	if err := cp.Client.Delete(ctx, server); err != nil {
		t.Fatal(err)
	}
	gone := server.DeepCopy()
	conditions.Deny(gone, "Late", "")
	err = writeStatus(ctx, mgr.GetClient(), server, gone, client.FieldOwner(fieldManager("gold")))
	if !apierrors.IsNotFound(err) {
		t.Errorf("a patch of a deleted slice: err = %v, want not found", err)
	}
}
