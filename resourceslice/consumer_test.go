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
	"k8s.io/apimachinery/pkg/types"
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
				assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, tc.reason)
				return
			}
			assert.False(t, called, tc.reason)
			assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision, tc.reason)
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
			res := slicetest.New(t, "gold", h, slicetest.WithObjects(append(objs, rs)...)).Reconcile(rs)
			require.NoError(t, res.Err)
			assert.Equal(t, tc.want, got, tc.reason)
		})
	}
}

// consumerRecorder accepts every slice unless deny is set, owns one
// ConfigMap per slice, and records what Consumer(ctx) says in Owned and in
// Release.
type consumerRecorder struct {
	deny     bool
	owned    []string
	released []string
}

var (
	_ handler.Owner    = (*consumerRecorder)(nil)
	_ handler.Releaser = (*consumerRecorder)(nil)
)

func (p *consumerRecorder) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if p.deny {
		conditions.Deny(rs, "Closed", "closed")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "granted")
	return ctrl.Result{}, nil
}

func (p *consumerRecorder) Owned(ctx context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
	p.owned = append(p.owned, resourceslice.Consumer(ctx))
	return []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: "grant-" + rs.Name}}}, nil
}

func (p *consumerRecorder) Release(ctx context.Context, _ types.NamespacedName) error {
	p.released = append(p.released, resourceslice.Consumer(ctx))
	return nil
}

// Owned and Release see the same trusted consumer as Handle (issue 28):
// the namespace's label, never the slice's claim. A Release for a slice
// already gone sees "" (only its key is left).
func TestConsumerInOwnedAndRelease(t *testing.T) {
	const id = "cluster-a"
	cases := map[string]struct {
		reason       string
		exit         func(t *testing.T, h *slicetest.Harness, p *consumerRecorder, rs *authv1beta1.ResourceSlice)
		wantReleased string
	}{
		"Denied": {
			reason: "The slice is Denied: the reconcile read it, Release knows its consumer.",
			exit: func(_ *testing.T, _ *slicetest.Harness, p *consumerRecorder, _ *authv1beta1.ResourceSlice) {
				p.deny = true
			},
			wantReleased: id,
		},
		"LeftTheClass": {
			reason: "The slice moved to another class: the reconcile read it, Release knows its consumer.",
			exit: func(t *testing.T, h *slicetest.Harness, _ *consumerRecorder, rs *authv1beta1.ResourceSlice) {
				changeSlice(t, h, rs, func(cur *authv1beta1.ResourceSlice) { cur.Spec.Class = "silver" })
			},
			wantReleased: id,
		},
		"Deleted": {
			reason: "The slice is gone: only its key is left, and Consumer is empty.",
			exit: func(t *testing.T, h *slicetest.Harness, _ *consumerRecorder, rs *authv1beta1.ResourceSlice) {
				require.NoError(t, h.Client.Delete(context.Background(), rs))
			},
			wantReleased: "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{"liqo.io/remote-cluster-id": id}}}
			rs := slicetest.NewSlice("s", slicetest.WithNamespace(ns.Name), slicetest.WithClass(gold), slicetest.WithConsumer(id),
				slicetest.WithRequest(corev1.ResourceCPU, "1"))
			p := &consumerRecorder{}
			h := slicetest.New(t, gold, p, slicetest.WithObjects(ns, rs),
				slicetest.WithReconcilerOptions(resourceslice.WithOwnedTypes(&corev1.ConfigMap{})))
			requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)
			assert.Equal(t, []string{id}, p.owned, "Owned sees the namespace's consumer")

			tc.exit(t, h, p, rs)
			require.NoError(t, h.Reconcile(rs).Err)
			assert.Equal(t, []string{tc.wantReleased}, p.released, tc.reason)
		})
	}
}
