package integration

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
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
