// Command billingmanager is a manager built outside the SDK's module, as a
// user builds theirs: its own policy (grant what a slice asks, deny an
// empty request) and a billing record per grant (a ConfigMap in
// --billing-namespace), served with the SDK's standard flags
// (github.com/sliceclass/sliceclass/flags), so that the Helm chart deploys
// it with its rendered args unchanged and one flag of its own in
// extraArgs. With --rates-secret it reads one named Secret at start (the
// chart grants get on that Secret only, rbac.namespaceRules); with
// --report-unserved-after it runs the SDK's unserved reporter over the class
// Leases (the chart's rbac.unservedReporter). The chart's tests build and
// run it under the chart's RBAC.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// billing grants what a slice asks and records each grant, at rate.
type billing struct {
	namespace, rate string
}

var (
	_ handler.Handler = billing{}
	_ handler.Owner   = billing{}
)

// Handle grants the request; an empty request is denied.
func (billing) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if len(rs.Spec.Resources) == 0 {
		conditions.Deny(rs, "NothingRequested", "the slice requests no resource")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
}

// Owned is the grant's billing record.
func (b billing) Owned(_ context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
	return []client.Object{&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.namespace, Name: "bill-" + rs.Namespace + "-" + rs.Name},
		Data:       map[string]string{"slice": rs.Namespace + "/" + rs.Name, "cpu": rs.Status.Resources.Cpu().String(), "rate": b.rate},
	}}, nil
}

func run() error {
	v := flags.Bind(flag.CommandLine)
	billingNS := flag.String("billing-namespace", "", "where the billing records go (required)")
	ratesSecret := flag.String("rates-secret", "", "namespace/name of a Secret whose key cpu is the rate recorded with each grant, read once at start (default: none)")
	unservedAfter := flag.Duration("report-unserved-after", 0, "report slices of a class nobody serves after this long (resourceslice.AddUnservedReporter over --class-lease-namespace; default: no report)")
	flag.Parse()
	if *billingNS == "" {
		return errors.New("--billing-namespace is required")
	}
	if *unservedAfter > 0 && v.ClassLeaseNamespace == "" {
		return errors.New("--report-unserved-after needs --class-lease-namespace, where the class Leases are")
	}
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
	rate, err := readRate(mgr.GetAPIReader(), *ratesSecret)
	if err != nil {
		return err
	}
	if *unservedAfter > 0 {
		if err := resourceslice.AddUnservedReporter(mgr, v.ClassLeaseNamespace, *unservedAfter); err != nil {
			return err
		}
	}
	policy := billing{namespace: *billingNS, rate: rate}
	names := make([]string, 0, len(classes))
	for _, c := range classes {
		opts := append(c.Options, resourceslice.WithOwnedTypes(&corev1.ConfigMap{}))
		if err := resourceslice.AddToManager(mgr, c.Name, policy, opts...); err != nil {
			return err
		}
		names = append(names, c.Name)
	}
	ctrl.Log.Info("serving", "classes", names, "billingNamespace", *billingNS)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// readRate reads the key cpu of the Secret namespace/name ref with a GET
// (the API reader: no cache, so no list or watch of Secrets); "" for none.
func readRate(r client.Reader, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return "", fmt.Errorf("--rates-secret %q: want namespace/name", ref)
	}
	var secret corev1.Secret
	if err := r.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &secret); err != nil {
		return "", fmt.Errorf("--rates-secret: %w", err)
	}
	return string(secret.Data["cpu"]), nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
