package resourceslice

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
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
