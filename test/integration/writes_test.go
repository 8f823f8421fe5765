package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The controller's status writes on a real API server: only its own fields,
// only when they change, one per decision, alongside a concurrent writer.

// A goroutine playing Liqo rewrites Authentication and authParams on every
// slice while the controller decides them: nobody's fields are lost, and the
// conflicts raise no Warning event.
func TestConcurrentLiqoWriter(t *testing.T) {
	cp.Require(t)
	const n = 500
	ns := testkit.Namespace(t, cp, "concurrent")
	for i := range n {
		create(t, sliceIn(ns, fmt.Sprintf("s-%03d", i), "conc"))
	}
	// The writer stops between writes, never by cancelling a request in
	// flight: a cancelled request's outcome is unknown, so it could not be
	// recorded as Liqo's last write.
	ctx := context.Background()
	var stopWriter atomic.Bool
	var rounds atomic.Int32

	type written struct {
		msg string
		crt string
		rv  string
	}
	var mu sync.Mutex
	last := map[string]written{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 0; !stopWriter.Load(); round++ {
			for i := 0; i < n && !stopWriter.Load(); i++ {
				name := fmt.Sprintf("s-%03d", i)
				w := written{msg: fmt.Sprintf("authenticated, round %d", round), crt: fmt.Sprintf("crt-%d", round)}
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					var rs authv1beta1.ResourceSlice
					if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil {
						return err
					}
					sliceconds.Set(&rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "ResourceSliceAuthenticationAccepted", w.msg)
					rs.Status.AuthParams.SignedCRT = []byte(w.crt)
					if err := cp.Client.Status().Update(ctx, &rs); err != nil {
						return err
					}
					w.rv = rs.ResourceVersion
					return nil
				})
				if err != nil {
					t.Errorf("Liqo writer: %v", err)
					continue
				}
				mu.Lock()
				last[name] = w
				mu.Unlock()
			}
			rounds.Add(1)
		}
	}()

	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "conc", accept("Granted", nil), resourceslice.WithMaxConcurrentReconciles(4), fastBackoff())
	})
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s-%03d", i)
	}
	testkit.Eventually(t, "all slices decided", decided(ns, names...))
	testkit.Eventually(t, "the Liqo writer to finish a full round", func() bool { return rounds.Load() >= 1 })
	stopWriter.Store(true)
	wg.Wait()
	require.Len(t, last, n, "the Liqo writer must have written every slice")

	var list authv1beta1.ResourceSliceList
	require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(ns)))
	var evs eventsv1.EventList
	require.NoError(t, cp.Client.List(ctx, &evs, client.InNamespace(ns)))
	for _, e := range evs.Items {
		assert.NotEqual(t, corev1.EventTypeWarning, e.Type, "conflicts with Liqo must requeue quietly, got a Warning event on %s: %s %s", e.Regarding.Name, e.Reason, e.Note)
	}
	for i := range list.Items {
		rs := &list.Items[i]
		w := last[rs.Name]
		a := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeAuthentication)
		assert.True(t, conditions.IsAccepted(rs), "%s lost our decision: %+v", rs.Name, rs.Status.Conditions)
		if a == nil || a.Message != w.msg || string(rs.Status.AuthParams.SignedCRT) != w.crt {
			t.Errorf("%s lost Liqo's last write: want %q/%q (rv %s), got %+v / %q (rv %s, managed %+v)",
				rs.Name, w.msg, w.crt, w.rv, a, rs.Status.AuthParams.SignedCRT, rs.ResourceVersion, rs.ManagedFields)
		}
	}
}

// A status field the Go types do not know (newer Liqo's status.class)
// survives the controller's write.
func TestUnknownStatusFieldsSurvive(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "unknown-fields")
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, cp.Client.Get(ctx, types.NamespacedName{Name: "resourceslices.authentication.liqo.io"}, &crd))
	for i := range crd.Spec.Versions {
		status := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"]
		status.Properties["class"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"] = status
	}
	require.NoError(t, cp.Client.Update(ctx, &crd))

	rs := sliceIn(ns, "newer", "unk")
	create(t, rs)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind("ResourceSlice"))
	// Wait until the API server serves the new schema: the field survives a
	// status write and read.
	testkit.Eventually(t, "status.class served", func() bool {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), u); err != nil {
			return false
		}
		_ = unstructured.SetNestedField(u.Object, "unk", "status", "class")
		if err := cp.Client.Status().Update(ctx, u); err != nil {
			return false
		}
		_ = cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), u)
		v, _, _ := unstructured.NestedString(u.Object, "status", "class")
		return v == "unk"
	})

	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "unk", accept("Granted", nil))
	})
	waitForDecision(t, ns, "newer")
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), u))
	v, _, _ := unstructured.NestedString(u.Object, "status", "class")
	assert.Equal(t, "unk", v, "status.class was erased by the controller's write")
}

// One status write per decision and none while idle, from the API server's
// own request counter.
func TestOneWritePerDecisionAndNoneIdle(t *testing.T) {
	cp.Require(t)
	const n = 50
	ns := testkit.Namespace(t, cp, "writes")
	var names []string
	for i := range n {
		name := fmt.Sprintf("w-%02d", i)
		names = append(names, name)
		create(t, sliceIn(ns, name, "writes"))
	}
	before := statusPatches(t)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "writes", accept("Granted", nil), resourceslice.WithMaxConcurrentReconciles(4))
	})
	testkit.Eventually(t, "all decided", decided(ns, names...))
	testkit.Eventually(t, "the API server to count a status PATCH per decision", func() bool {
		return statusPatches(t)-before >= n
	})
	testkit.Consistently(t, 5*time.Second, "exactly one status PATCH per decision, and none while idle", func() bool {
		if got := statusPatches(t) - before; got != n {
			t.Logf("status PATCHes for %d decisions: got %d", n, got)
			return false
		}
		return true
	})
}

// The status patch removes what an offer drops (a resource, a node label,
// the storage classes) on the real server, and keeps Liqo's fields, as the
// offer shrinks step by step. A label change on the slice re-runs the
// handler, which reads the step from the label.
func TestShrinkingOfferOnTheServer(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "shrink")
	q := resource.MustParse
	offers := map[string]authv1beta1.ResourceSliceStatus{
		"0": {Resources: corev1.ResourceList{"cpu": q("2"), "memory": q("4Gi")}, NodeLabels: map[string]string{"tier": "gold", "zone": "a"},
			StorageClasses: []liqov1beta1.StorageType{{StorageClassName: "fast"}}},
		"1": {Resources: corev1.ResourceList{"cpu": q("1")}, NodeLabels: map[string]string{"tier": "gold"}},
		"2": {},
	}
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		o := offers[rs.Labels["step"]]
		rs.Status.Resources, rs.Status.NodeLabels, rs.Status.StorageClasses = o.Resources, o.NodeLabels, o.StorageClasses
		conditions.Accept(rs, "Offer"+rs.Labels["step"], "")
		return ctrl.Result{}, nil
	})
	testkit.StartManager(t, cp, func(mgr manager.Manager) error { return resourceslice.AddToManager(mgr, "shrink", h) })
	create(t, sliceIn(ns, "s", "shrink", slicetest.WithLabel("step", "0")))
	for _, step := range []string{"0", "1", "2"} {
		if step != "0" {
			rs := get(t, ns, "s")
			rs.Labels["step"] = step
			require.NoError(t, cp.Client.Update(context.Background(), rs))
		}
		testkit.Eventually(t, "offer "+step, func() bool {
			c := conditions.Get(get(t, ns, "s"), authv1beta1.ResourceSliceConditionTypeResources)
			return c != nil && c.Reason == "Offer"+step
		})
		got, want := get(t, ns, "s").Status, offers[step]
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(authv1beta1.ResourceSliceStatus{}, "Conditions", "AuthParams"),
			cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
			t.Errorf("offer %s: stored offer (-want +got):\n%s", step, diff)
		}
		if assert.NotNil(t, got.AuthParams, "offer %s: Liqo's authParams lost", step) {
			assert.Equal(t, "crt", string(got.AuthParams.SignedCRT), "offer %s: Liqo's authParams changed", step)
		}
		assert.True(t, conditions.IsAuthenticated(&authv1beta1.ResourceSlice{Status: got}), "offer %s: Liqo's Authentication condition lost: %+v", step, got.Conditions)
	}
}

// A handler that meddles with Liqo's fields gets its decision saved and its
// meddling dropped, on the real server.
func TestForeignChangesDiscarded(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "foreign")
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Labels["meddled"] = "yes"
		rs.Spec.Resources = nil
		rs.Status.AuthParams.SignedCRT = []byte("forged")
		sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionDenied, "Forged", "")
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	testkit.StartManager(t, cp, func(mgr manager.Manager) error { return resourceslice.AddToManager(mgr, "foreign", h) })
	create(t, sliceIn(ns, "f", "foreign"))
	got := waitForDecision(t, ns, "f")
	assert.NotContains(t, got.Labels, "meddled", "the handler's label reached the server")
	assert.Equal(t, int64(1), got.Spec.Resources.Cpu().Value(), "the handler's spec change reached the server: %v", got.Spec.Resources)
	if assert.NotNil(t, got.Status.AuthParams) {
		assert.Equal(t, "crt", string(got.Status.AuthParams.SignedCRT), "the handler's authParams reached the server")
	}
	assert.True(t, conditions.IsAuthenticated(got), "the handler's Authentication condition reached the server: %+v", got.Status.Conditions)
	testkit.Eventually(t, "ChangesDiscarded event", hasEvent(t, ns, "f", "ChangesDiscarded"))
}

// A handler's RequeueAfter brings the slice back, and re-deciding the same
// answer writes nothing.
func TestRequeueAfterWithoutWrites(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "requeue")
	var c calls
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		c.inc(rs.Name)
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{RequeueAfter: 300 * time.Millisecond}, nil
	})
	testkit.StartManager(t, cp, func(mgr manager.Manager) error { return resourceslice.AddToManager(mgr, "requeue", h) })
	create(t, sliceIn(ns, "q", "requeue"))
	rv := waitForDecision(t, ns, "q").ResourceVersion
	testkit.Eventually(t, "handler called again by RequeueAfter", func() bool { return c.get("q") >= 4 })
	assert.Equal(t, rv, get(t, ns, "q").ResourceVersion, "re-deciding the same answer wrote the slice")
}
