package handler_test

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// grantRecorder accepts every slice and owns a ConfigMap recording the grant.
type grantRecorder struct{}

// The compiler checks that grantRecorder is a Handler and an Owner.
var (
	_ handler.Handler = grantRecorder{}
	_ handler.Owner   = grantRecorder{}
)

func (grantRecorder) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "all requested resources granted")
	return ctrl.Result{}, nil
}

func (grantRecorder) Owned(_ context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
	return []client.Object{&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: rs.Name + "-grant"},
		Data:       map[string]string{"cpu": rs.Status.Resources.Cpu().String()},
	}}, nil
}

func ExampleOwner() {
	var h handler.Handler = grantRecorder{}
	rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-a", Name: "s1"}}
	rs.Spec.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	if _, err := h.Handle(context.Background(), rs); err != nil {
		fmt.Println(err)
	}
	// The SDK finds the optional interface by type assertion.
	if o, ok := h.(handler.Owner); ok {
		objs, _ := o.Owned(context.Background(), rs)
		for _, obj := range objs {
			fmt.Println(obj.GetNamespace(), obj.GetName(), obj.(*corev1.ConfigMap).Data)
		}
	}
	// Output: liqo-tenant-a s1-grant map[cpu:2]
}
