// Command flagsmanager is the smallest manager a user builds from the SDK's
// flags package alone: its main is one loop over flags.Values.ClassConfigs,
// so each class of the chart's classes file is served with the budgets and
// priority the file gives it (a SliceBudget, shared or own budgets), and
// its policy grants what a slice asks, within the entry's caps when it has
// any. The chart's tests build and run it under the chart's RBAC.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// grant offers what a slice asks, each resource at most its cap (a
// resource without a cap as asked).
func grant(caps corev1.ResourceList) handler.Func {
	return func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		offer := corev1.ResourceList{}
		for name, asked := range rs.Spec.Resources {
			if limit, ok := caps[name]; ok && asked.Cmp(limit) > 0 {
				asked = limit
			}
			offer[name] = asked
		}
		rs.Status.Resources = offer
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	}
}

func run() error {
	v := flags.Bind(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(v.Logger())
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, authv1beta1.AddToScheme, offloadingv1beta1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cfg, err := v.RESTConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, v.ManagerOptions(scheme))
	if err != nil {
		return err
	}
	if err := flags.AddProbes(mgr); err != nil {
		return err
	}
	classes, err := v.ClassConfigs(mgr)
	if err != nil {
		return err
	}
	set, err := resourceslice.NewClassSet(mgr)
	if err != nil {
		return err
	}
	for _, c := range classes {
		if err := set.Serve(c.Name, grant(c.Entry.Caps), c.Options...); err != nil {
			return err
		}
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
