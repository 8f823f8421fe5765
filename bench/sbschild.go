package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
)

// sbsChild runs the bench binary as one of the side by side's processes
// (sidebyside.go) until SIGTERM: the template-shaped controller or the plain
// client, deciding the slices of f.sbsClass. It prints sbsReadyLine on stdout
// once its slices' informer has synced.
func sbsChild(f flags) error {
	if f.sbsClass == "" {
		return errors.New("-sbs-child needs -sbs-class")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// As a template's main: -kubeconfig (controller-runtime's flag), then
	// KUBECONFIG, then in-cluster.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("sbs child: loading the API server config: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := sdkscheme.Add(scheme); err != nil {
		return err
	}
	switch f.sbsChild {
	case sbsTemplate:
		return runTemplate(ctx, cfg, scheme, f.sbsClass)
	case sbsPlain:
		return runPlain(ctx, cfg, scheme, f.sbsClass)
	}
	return fmt.Errorf("-sbs-child: want %s or %s, got %q", sbsTemplate, sbsPlain, f.sbsChild)
}

// Event reason and message of the template's decisions.
const (
	templateReason  = "Granted"
	templateMessage = "granted as requested"
)

// templateReconciler is the template-shaped controller: a class controller
// as a kubebuilder template writes it, standing in for the original template
// the issue measures against. It reads the slice, skips it once decided,
// grants what it requests with a Status().Update of the whole object, and
// records an event per decision through the old core/v1 recorder.
type templateReconciler struct {
	c        client.Client
	recorder record.EventRecorder
}

// Reconcile decides one slice of the class.
func (r *templateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rs authv1beta1.ResourceSlice
	if err := r.c.Get(ctx, req.NamespacedName, &rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if conditions.IsDecided(&rs) {
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(&rs, templateReason, templateMessage)
	if err := r.c.Status().Update(ctx, &rs); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the decision of slice %s: %w", req.NamespacedName, err)
	}
	r.recorder.Event(&rs, corev1.EventTypeNormal, templateReason, templateMessage)
	return ctrl.Result{}, nil
}

// runTemplate runs the template-shaped controller on a manager with
// controller-runtime's defaults (a cache of whole objects, managed fields
// kept; one worker) but for the scheme and a metrics endpoint on a free
// local port, as the example manager's in the side by side.
func runTemplate(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, class string) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "127.0.0.1:0"}})
	if err != nil {
		return fmt.Errorf("template: creating the manager: %w", err)
	}
	ofClass := predicate.NewPredicateFuncs(func(o client.Object) bool {
		rs, ok := o.(*authv1beta1.ResourceSlice)
		return ok && string(rs.Spec.Class) == class
	})
	r := &templateReconciler{
		c: mgr.GetClient(),
		// The template records through the old core/v1 events API.
		recorder: mgr.GetEventRecorderFor("template"), //nolint:staticcheck // the recorder the template used
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&authv1beta1.ResourceSlice{}, builder.WithPredicates(ofClass)).Complete(r); err != nil {
		return fmt.Errorf("template: building the controller: %w", err)
	}
	go func() {
		// Up once the manager's cache runs and the slices' informer, which
		// the controller registers as it starts, has synced.
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return
		}
		if _, err := mgr.GetCache().GetInformer(ctx, &authv1beta1.ResourceSlice{}); err == nil {
			fmt.Println(sbsReadyLine)
		}
	}()
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("template: running the manager: %w", err)
	}
	return nil
}

// runPlain is the plain client: an informer on ResourceSlices and, once it
// has synced, one optimistic status patch per undecided slice of the class
// from 16 goroutines (the write of baseline.go), no events. It then runs
// until ctx ends, keeping its informer, as a process serving on would.
func runPlain(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, class string) error {
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("plain: creating the cache: %w", err)
	}
	if _, err := informers.GetInformer(ctx, &authv1beta1.ResourceSlice{}); err != nil {
		return fmt.Errorf("plain: the slices' informer: %w", err)
	}
	errs := make(chan error, 1)
	go func() { errs <- informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return errors.New("plain: the slices' informer did not sync")
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("plain: creating the client: %w", err)
	}
	var list authv1beta1.ResourceSliceList
	if err := informers.List(ctx, &list); err != nil {
		return fmt.Errorf("plain: listing the cached slices: %w", err)
	}
	var todo []*authv1beta1.ResourceSlice
	for i := range list.Items {
		if rs := &list.Items[i]; string(rs.Spec.Class) == class && !conditions.IsDecided(rs) {
			todo = append(todo, rs)
		}
	}
	fmt.Println(sbsReadyLine)
	if err := parallel(16, len(todo), func(i int) error {
		cur := todo[i]
		desired := cur.DeepCopy()
		desired.Status.Resources = desired.Spec.Resources.DeepCopy()
		conditions.Accept(desired, templateReason, templateMessage)
		if err := c.Status().Patch(ctx, desired, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("plain: patching slice %s/%s: %w", cur.Namespace, cur.Name, err)
		}
		return nil
	}); err != nil {
		return err
	}
	return <-errs
}
