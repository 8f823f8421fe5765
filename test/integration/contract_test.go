package integration

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// A handler that meddles with Liqo's fields gets its decision saved and its
// meddling dropped, on the real server.
func TestForeignChangesDiscarded(t *testing.T) {
	ns := namespace(t, "foreign")
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Labels["meddled"] = "yes"
		rs.Spec.Resources = nil
		rs.Status.AuthParams.SignedCRT = []byte("forged")
		conditions.Set(rs, conditions.Authentication, conditions.Denied, "Forged", "")
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	startManager(t, func(mgr manager.Manager) error { return resourceslice.AddToManager(mgr, "foreign", h) })
	create(t, sliceIn(ns, "f", "foreign"))
	eventually(t, 30*time.Second, "decision", decided(ns, "f"))
	got := get(t, ns, "f")
	if got.Labels["meddled"] != "" || got.Spec.Resources.Cpu().Value() != 1 || string(got.Status.AuthParams.SignedCRT) != "crt" || !conditions.IsAuthenticated(got) {
		t.Errorf("Liqo's fields changed on the server: labels %v resources %v crt %q conditions %+v",
			got.Labels, got.Spec.Resources, got.Status.AuthParams.SignedCRT, got.Status.Conditions)
	}
	eventually(t, 30*time.Second, "ChangesDiscarded event", hasEvent(t, ns, "f", resourceslice.ReasonChangesDiscarded))
}

// A handler's RequeueAfter brings the slice back, and re-deciding the same
// answer writes nothing.
func TestRequeueAfterWithoutWrites(t *testing.T) {
	ns := namespace(t, "requeue")
	var c calls
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		c.inc(rs.Name)
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{RequeueAfter: 300 * time.Millisecond}, nil
	})
	startManager(t, func(mgr manager.Manager) error { return resourceslice.AddToManager(mgr, "requeue", h) })
	create(t, sliceIn(ns, "q", "requeue"))
	eventually(t, 30*time.Second, "decision", decided(ns, "q"))
	rv := get(t, ns, "q").ResourceVersion
	eventually(t, 10*time.Second, "handler called again by RequeueAfter", func() bool { return c.get("q") >= 4 })
	if got := get(t, ns, "q").ResourceVersion; got != rv {
		t.Errorf("re-deciding the same answer wrote the slice: rv %s → %s", rv, got)
	}
}

// The status patch removes what an offer drops (a resource, a node label,
// the storage classes) on the real server, and keeps Liqo's fields, as the
// offer shrinks step by step. A label change on the slice re-runs the
// handler, which reads the step from the label.
func TestShrinkingOfferOnTheServer(t *testing.T) {
	ns := namespace(t, "shrink")
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
	startManager(t, func(mgr manager.Manager) error { return resourceslice.AddToManager(mgr, "shrink", h) })
	create(t, sliceIn(ns, "s", "shrink", slicetest.WithLabel("step", "0")))
	for _, step := range []string{"0", "1", "2"} {
		if step != "0" {
			rs := get(t, ns, "s")
			rs.Labels["step"] = step
			if err := cp.Client.Update(context.Background(), rs); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, 30*time.Second, "offer "+step, func() bool {
			c := conditions.Get(get(t, ns, "s"), conditions.Resources)
			return c != nil && c.Reason == "Offer"+step
		})
		got, want := get(t, ns, "s").Status, offers[step]
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(authv1beta1.ResourceSliceStatus{}, "Conditions", "AuthParams"),
			cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
			t.Errorf("offer %s: stored offer (-want +got):\n%s", step, diff)
		}
		if got.AuthParams == nil || string(got.AuthParams.SignedCRT) != "crt" || !conditions.IsAuthenticated(&authv1beta1.ResourceSlice{Status: got}) {
			t.Errorf("offer %s: Liqo's fields lost: %+v", step, got)
		}
	}
}
