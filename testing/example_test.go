package slicetest_test

import (
	"context"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// policy grants up to 8 CPUs and denies the rest.
var policy = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if rs.Spec.Resources.Cpu().Value() > 8 {
		conditions.Deny(rs, "TooLarge", "at most 8 CPUs per slice")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
})

func TestPolicy(t *testing.T) {
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "16"))
	res := slicetest.Run(t, "gold", policy, slice)
	if res.Err != nil || res.Decision != conditions.Denied || res.Reason != "TooLarge" || len(res.Writes) != 1 {
		t.Errorf("got %s/%s with %d writes (err %v)", res.Decision, res.Reason, len(res.Writes), res.Err)
	}
}

// Run reconciles one slice with the real reconciler on a fake API and says
// what happened. In a test, pass your *testing.T.
func ExampleRun() {
	t := &testing.T{}
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))
	res := slicetest.Run(t, "gold", policy, slice)
	fmt.Println(res.Decision, res.Reason, len(res.Writes), res.Events[0].Type)
	// Output: Accepted Granted 1 Normal
}

// A Harness runs several steps: here a conflict on the first status write is
// retried quietly, and a decided slice costs no write.
func ExampleNew() {
	t := &testing.T{}
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))
	h := slicetest.New(t, "gold", policy, slicetest.WithObjects(slice), slicetest.WithStatusWriteErrors(slicetest.Conflict()))

	first := h.Reconcile(slice)
	fmt.Println(first.Decision == "", first.Err, first.Result.RequeueAfter > 0)
	second := h.Reconcile(slice)
	fmt.Println(second.Decision, len(second.Writes))
	third := h.Reconcile(slice)
	fmt.Println(third.Decision, len(third.Writes))
	// Output:
	// true <nil> true
	// Accepted 1
	// Accepted 0
}
