package grantrecords_test

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/examples/grantrecords"
	"github.com/sliceclass/sliceclass/handler"
)

// The gold class's policy decides a slice, then says which objects its grant
// needs: the SDK applies them while the slice is Accepted.
func ExampleNew() {
	p, err := grantrecords.New(grantrecords.WithClass("gold"), grantrecords.WithPriority(5000))
	if err != nil {
		panic(err)
	}
	rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-a", Name: "s1", UID: "2f1c"}}
	rs.Spec.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}

	var h handler.Handler = p
	if _, err := h.Handle(context.Background(), rs); err != nil {
		panic(err)
	}
	objs, err := h.(handler.Owner).Owned(context.Background(), rs)
	if err != nil {
		panic(err)
	}
	for _, obj := range objs {
		fmt.Printf("%T %s/%s\n", obj, obj.GetNamespace(), obj.GetName())
	}
	fmt.Println(objs[0].(*corev1.ConfigMap).Data)
	// Output:
	// *v1.ConfigMap sliceclass-accounting/gold.liqo-tenant-a.s1
	// *v1.PriorityClass /gold.liqo-tenant-a.s1
	// map[class:gold resources:cpu=4 sliceName:s1 sliceNamespace:liqo-tenant-a sliceUID:2f1c]
}
