package resourceslice_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

func TestSmoke(t *testing.T) {
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "ok")
		return ctrl.Result{}, nil
	})
	s := slicetest.NewSlice("a", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "2"))
	hs := slicetest.New(t, "gold", h, slicetest.WithObjects(s))
	r := hs.Reconcile(s)
	t.Logf("%+v", r)
	if r.Decision != conditions.Accepted || len(r.Writes) != 1 {
		t.Fatalf("bad %+v", r)
	}
	hs.AssertIdempotent(s)
	hs2 := slicetest.New(t, "gold", h, slicetest.WithObjects(s), slicetest.WithStatusWriteErrors(slicetest.Conflict()))
	r = hs2.Reconcile(s)
	t.Logf("%+v", r)
}
