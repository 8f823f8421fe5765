package resourceslice_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// A consumer controls its slice's spec and the labels its replicator sets;
// only the namespace is the provider's fact (issue 12). A slice whose claims
// disagree is never handed to the handler, gate or no gate.
func TestConsumerMismatchIsNeverAccepted(t *testing.T) {
	tenantNS := func(id string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-ns", Labels: map[string]string{"liqo.io/remote-cluster-id": id}}}
	}
	claim := func(spec, origin string) slicetest.SliceOption {
		return func(rs *authv1beta1.ResourceSlice) {
			c := liqov1beta1.ClusterID(spec)
			rs.Spec.ConsumerClusterID = &c
			rs.Labels["liqo.io/originID"] = origin
		}
	}
	cases := map[string]struct {
		objs         []client.Object
		claim        slicetest.SliceOption
		wantMismatch bool
		reason       string
	}{
		"spec names another cluster than the namespace": {
			objs: []client.Object{tenantNS("victim")}, claim: claim("other", "victim"), wantMismatch: true,
			reason: "a drained consumer must not borrow another cluster's identity through spec.consumerClusterID",
		},
		"both claims name another cluster than the namespace": {
			objs: []client.Object{tenantNS("victim")}, claim: claim("other", "other"), wantMismatch: true,
			reason: "the namespace's label is authoritative when present",
		},
		"origin label and spec disagree, namespace unlabelled": {
			claim: claim("other", "consumer"), wantMismatch: true,
			reason: "without a namespace label, the two claims must still agree",
		},
		"all agree": {
			objs: []client.Object{tenantNS("consumer")}, claim: claim("consumer", "consumer"),
			reason: "an honest slice goes to the handler",
		},
		"no namespace label, claims agree": {
			claim:  claim("consumer", "consumer"),
			reason: "today's behaviour for namespaces Liqo did not label",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			called := false
			h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				called = true
				rs.Status.Resources = rs.Spec.Resources.DeepCopy()
				conditions.Accept(rs, "Granted", "")
				return ctrl.Result{}, nil
			})
			s := slicetest.NewSlice("s", slicetest.WithClass("gold"), slicetest.WithNamespace("tenant-ns"), tc.claim)
			hs := slicetest.New(t, "gold", h, slicetest.WithObjects(append(tc.objs, s)...),
				slicetest.WithReconcilerOptions(resourceslice.WithoutAuthenticationGate()))
			res := hs.Reconcile(s)
			require.NoError(t, res.Err)
			if !tc.wantMismatch {
				assert.True(t, called, tc.reason)
				assert.Equal(t, conditions.Accepted, res.Decision, tc.reason)
				return
			}
			assert.False(t, called, tc.reason)
			assert.Equal(t, conditions.Denied, res.Decision, tc.reason)
			assert.Equal(t, "ConsumerMismatch", res.Reason)
			assert.Empty(t, res.Resources)
			var warned bool
			for _, e := range res.Events {
				warned = warned || (e.Type == corev1.EventTypeWarning && e.Reason == "ConsumerMismatch")
			}
			assert.True(t, warned, "a Warning event says why")
			hs.AssertIdempotent(s)
		})
	}
}

// Consumer(ctx) is the namespace's liqo.io/remote-cluster-id label, or the
// namespace itself: never the slice's own claims, so a consumer cannot
// switch IDs to reset a per-consumer limit.
func TestConsumerIsTheTrustedOne(t *testing.T) {
	cases := map[string]struct {
		reason string
		ns     *corev1.Namespace
		claim  string
		want   string
	}{
		"Labelled": {
			reason: "Liqo labels every tenant namespace with the consumer's cluster ID.",
			ns:     &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{"liqo.io/remote-cluster-id": "cluster-a"}}},
			claim:  "cluster-a", want: "cluster-a",
		},
		"UnlabelledNamespaceIsTheConsumer": {
			reason: "Without the label, the slice's claim is not trusted: the namespace is the consumer.",
			ns:     &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b"}},
			claim:  "anything", want: "tenant-b",
		},
		"NoNamespaceObject": {
			reason: "A namespace the reader cannot find is still its own consumer.",
			claim:  "anything", want: "tenant-c",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got string
			h := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				got = resourceslice.Consumer(ctx)
				conditions.Deny(rs, "Recorded", "recorded the consumer")
				return ctrl.Result{}, nil
			})
			ns := tc.want
			var objs []client.Object
			if tc.ns != nil {
				ns = tc.ns.Name
				objs = append(objs, tc.ns)
			}
			rs := slicetest.NewSlice("s", slicetest.WithNamespace(ns), slicetest.WithClass("gold"), slicetest.WithConsumer(tc.claim))
			res := slicetest.Run(t, "gold", h, rs, objs...)
			require.NoError(t, res.Err)
			assert.Equal(t, tc.want, got, tc.reason)
		})
	}
}
