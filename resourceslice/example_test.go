package resourceslice_test

import (
	"context"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// Two classes with two policies in one manager, served by one ClassSet:
// each is its own controller, "resourceslice-gold" and
// "resourceslice-silver", and they share the set's watches. The scheme is
// yours: add client-go's types and the SDK's before building the manager.
func ExampleNewClassSet() {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	set, err := resourceslice.NewClassSet(mgr)
	if err != nil {
		panic(err)
	}
	gold := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "gold gets what it asks for")
		return ctrl.Result{}, nil
	})
	silver := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Deny(rs, "SoldOut", "no silver capacity left")
		return ctrl.Result{}, nil
	})
	if err := set.Serve("gold", gold, resourceslice.WithMaxConcurrentReconciles(4)); err != nil {
		panic(err)
	}
	if err := set.Serve("silver", silver, resourceslice.WithResyncPeriod(10*time.Minute)); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// One class in a manager: AddToManager is a ClassSet of that one class.
func ExampleAddToManager() {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	gold := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "gold gets what it asks for")
		return ctrl.Result{}, nil
	})
	if err := resourceslice.AddToManager(mgr, "gold", gold); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// Inside Handle, Consumer is the slice's trusted consumer: its namespace's
// liqo.io/remote-cluster-id label, or the namespace. A policy keyed on it
// cannot be fooled by what a consumer writes on its slice.
func ExampleConsumer() {
	vip := map[string]bool{"cluster-a": true}
	policy := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		if !vip[resourceslice.Consumer(ctx)] {
			conditions.Deny(rs, "NotAVIP", "this class serves VIP consumers only")
			return ctrl.Result{}, nil
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "granted to a VIP consumer")
		return ctrl.Result{}, nil
	})
	_ = policy
	fmt.Printf("%q\n", resourceslice.Consumer(context.Background()))
	// Output: ""
}
