package handler_test

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
)

func ExampleFunc() {
	var h handler.Handler = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "all requested resources granted")
		return ctrl.Result{}, nil
	})

	rs := &authv1beta1.ResourceSlice{}
	if _, err := h.Handle(context.Background(), rs); err != nil {
		fmt.Println(err)
	}
	fmt.Println(conditions.IsAccepted(rs))
	// Output: true
}
