package resourceslice

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/testkit"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// Tests of the status write (status.go) that need its unexported parts:
// the ownership table, the patch and the writers. The tests through the
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

func TestAnswerVersion(t *testing.T) {
	cases := []struct {
		reason string
		body   string
		want   string // "" means an error
	}{
		{reason: "keys sorted, as the API server encodes a custom resource",
			body: `{"apiVersion":"a/v1","kind":"K","metadata":{"annotations":{"x":"y"},"labels":{"l":"v"},"managedFields":[{"fieldsV1":{"f:metadata":{"f:resourceVersion":{}}}}],"name":"n","resourceVersion":"42","uid":"u"},"spec":{"csr":"AAAA"}}`,
			want: "42"},
		{reason: "metadata after spec is still found",
			body: `{"spec":{"resourceVersion":"1","nested":[{"resourceVersion":"2"}]},"metadata":{"resourceVersion":"7"}}`,
			want: "7"},
		{reason: "a label named resourceVersion is not the object's",
			body: `{"metadata":{"labels":{"resourceVersion":"bogus"},"resourceVersion":"9"}}`,
			want: "9"},
		{reason: "an annotation quoting the field is not the object's",
			body: `{"metadata":{"annotations":{"a":"\"resourceVersion\":\"bogus\""},"resourceVersion":"10"}}`,
			want: "10"},
		{reason: "values of every kind skipped before it, braces and escaped quotes inside strings",
			body: `{"a":[1,-2.5e3,true,null,{"x":"}]\\\"{"}],"b":"\"metadata\":{","metadata":{"generation":3,"labels":{},"finalizers":[],"resourceVersion":"11"}}`,
			want: "11"},
		{reason: "pretty-printed", body: "{\n  \"metadata\" : {\n    \"resourceVersion\" : \"12\"\n  }\n}", want: "12"},
		{reason: "an escaped resourceVersion is not guessed at", body: `{"metadata":{"resourceVersion":"1\u0032"}}`},
		{reason: "no resourceVersion", body: `{"metadata":{"name":"n"},"status":{}}`},
		{reason: "an empty metadata", body: `{"metadata":{},"spec":{}}`},
		{reason: "no metadata", body: `{}`},
		{reason: "an unterminated string before metadata", body: `{"a":"x`},
		{reason: "an empty resourceVersion", body: `{"metadata":{"resourceVersion":""}}`},
		{reason: "resourceVersion not a string", body: `{"metadata":{"resourceVersion":3}}`},
		{reason: "metadata not an object", body: `{"metadata":"x"}`},
		{reason: "not an object", body: `[1,2]`},
		{reason: "truncated", body: `{"metadata":{"name":"n","resourceV`},
		{reason: "empty", body: ``},
	}
	for _, tc := range cases {
		if tc.want != "" && !json.Valid([]byte(tc.body)) {
			t.Fatalf("%s: the case's body is not JSON", tc.reason)
		}
		got, err := answerVersion([]byte(tc.body))
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: answerVersion(%s) = %q, want an error", tc.reason, tc.body, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: answerVersion(%s) = %q, %v; want %q", tc.reason, tc.body, got, err, tc.want)
		}
	}
}

// The REST status writer leaves the slice it patched equal to what the API
// server then holds (Liqo's condition and authParams included) without
// decoding the answer, and reports conflicts and gone slices as the client
// does.
func TestRESTStatusWriterMatchesTheServer(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "status-writer")
	rs := &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns, Labels: map[string]string{
			// A label whose key is the field the writer reads.
			"resourceVersion": "bogus", "liqo.io/replicated": "true",
		}},
		Spec: authv1beta1.ResourceSliceSpec{Class: "gold", Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
	}
	if err := cp.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	// Liqo's writes: the Authentication condition and authParams.
	conditions.Set(rs, conditions.Authentication, authv1beta1.ResourceSliceConditionAccepted, "Authenticated", "")
	rs.Status.AuthParams = &authv1beta1.AuthParams{SignedCRT: []byte("crt")}
	if err := cp.Client.Status().Update(ctx, rs); err != nil {
		t.Fatal(err)
	}

	mgr, err := manager.New(cp.Config, testkit.ManagerOptions(t, cp.Scheme))
	if err != nil {
		t.Fatal(err)
	}
	w, err := newRESTStatus(mgr)
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
	if err := w.patchStatus(ctx, desired, ownedPatch{from: current}, client.FieldOwner(FieldManager("gold"))); err != nil {
		t.Fatalf("patchStatus: %v", err)
	}
	server := &authv1beta1.ResourceSlice{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), server); err != nil {
		t.Fatal(err)
	}
	if desired.ResourceVersion == current.ResourceVersion {
		t.Errorf("the written slice kept the resourceVersion it was read at (%s)", current.ResourceVersion)
	}
	ignore := cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ManagedFields")
	if d := cmp.Diff(server, desired, ignore); d != "" {
		t.Errorf("the written slice is not what the server holds (-server +written):\n%s", d)
	}
	var owners []string
	for _, m := range server.ManagedFields {
		if m.Subresource == "status" {
			owners = append(owners, m.Manager)
		}
	}
	if !slices.Contains(owners, FieldManager("gold")) {
		t.Errorf("status field managers = %v, want %s among them", owners, FieldManager("gold"))
	}

	// A patch computed from the slice as it was before is refused.
	stale := current.DeepCopy()
	conditions.Deny(stale, "Late", "")
	err = w.patchStatus(ctx, stale, ownedPatch{from: current}, client.FieldOwner(FieldManager("gold")))
	if !apierrors.IsConflict(err) {
		t.Errorf("a patch at an old resourceVersion: err = %v, want a conflict", err)
	}

	if err := cp.Client.Delete(ctx, server); err != nil {
		t.Fatal(err)
	}
	gone := server.DeepCopy()
	conditions.Deny(gone, "Late", "")
	err = w.patchStatus(ctx, gone, ownedPatch{from: server}, client.FieldOwner(FieldManager("gold")))
	if !apierrors.IsNotFound(err) {
		t.Errorf("a patch of a deleted slice: err = %v, want not found", err)
	}
}

// An answer whose resourceVersion cannot be read is decoded whole, as the
// client would decode it, rather than guessed at.
func TestRESTStatusDecodesAnOddAnswerWhole(t *testing.T) {
	cases := []struct {
		reason, answer string
		wantErr        bool
		wantCPU        string
	}{
		{reason: "no resourceVersion: the whole answer is the slice",
			answer: `{"metadata":{"name":"s","namespace":"ns"},"status":{"resources":{"cpu":"3"}}}`, wantCPU: "3"},
		{reason: "a resourceVersion that is no string: the client's decoding error",
			answer: `{"metadata":{"name":"s","namespace":"ns","resourceVersion":12}}`, wantErr: true},
	}
	for _, tc := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(tc.answer))
		}))
		rc, err := apiutil.RESTClientForGVK(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind), true, false,
			&rest.Config{Host: srv.URL}, serializer.NewCodecFactory(scheme.Scheme), srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "1"}}
		err = restStatus{rest: rc}.patchStatus(context.Background(), rs, ownedPatch{from: rs.DeepCopy()}, "m")
		srv.Close()
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error", tc.reason)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.reason, err)
			continue
		}
		if got := rs.Status.Resources.Cpu().String(); got != tc.wantCPU {
			t.Errorf("%s: status cpu = %s, want %s", tc.reason, got, tc.wantCPU)
		}
	}
}
