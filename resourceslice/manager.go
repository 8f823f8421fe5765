package resourceslice

import (
	"context"
	"fmt"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/handler"
)

// consumerIndexPrefix prefixes the cache field index AddToManager registers
// per class: this class's slices keyed by consumer cluster ID. Registering
// the same class twice in one manager collides on it.
const consumerIndexPrefix = "sliceclass.io/consumer-of-class."

// AddToManager registers a controller named "resourceslice-<class>" in mgr
// that decides the class's ResourceSlices with h. Call it once per class,
// before mgr.Start.
//
// It returns an error naming the class for an empty or "default" class
// (Liqo's own), a class that is not a valid label value, a nil handler, a
// class already registered in this manager, or a bad option. It adds Liqo's
// authentication types to the manager's scheme only if they are missing.
//
// The manager's client must read ResourceSlices (and Tenants, unless
// WithoutTenantRule) and patch resourceslices/status; its cache must see the
// namespaces where Liqo replicates slices.
func AddToManager(mgr manager.Manager, class string, h handler.Handler, opts ...Option) error {
	if mgr == nil {
		return fmt.Errorf("class %q: nil manager", class)
	}
	if err := ValidateClass(class); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("class %q: nil handler", class)
	}
	name := ControllerName(class)
	cfg, err := newConfig(opts)
	if err != nil {
		return fmt.Errorf("class %q: invalid options: %w", class, err)
	}
	if cfg.recorder == nil {
		// A copy: never write into the caller's variadic slice.
		opts = append(append([]Option(nil), opts...), WithEventRecorder(mgr.GetEventRecorder(name)))
	}

	scheme := mgr.GetScheme()
	if !scheme.Recognizes(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind)) ||
		!scheme.Recognizes(authv1beta1.GroupVersion.WithKind(authv1beta1.TenantKind)) {
		if err := authv1beta1.AddToScheme(scheme); err != nil {
			return fmt.Errorf("class %q: adding Liqo types to the manager's scheme: %w", class, err)
		}
	}

	r, err := NewReconciler(mgr.GetClient(), class, h, opts...)
	if err != nil {
		return err
	}

	index := consumerIndexPrefix + class
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &authv1beta1.ResourceSlice{}, index,
		func(o client.Object) []string {
			rs, ok := o.(*authv1beta1.ResourceSlice)
			if !ok || ClassOf(rs) != class {
				return nil
			}
			if id := ConsumerID(rs); id != "" {
				return []string{id}
			}
			return nil
		}); err != nil {
		if strings.Contains(err.Error(), "conflict") {
			return fmt.Errorf("class %q is already registered in this manager", class)
		}
		return fmt.Errorf("class %q: indexing ResourceSlices: %w", class, err)
	}
	r.consumerIndex = index

	copts := controller.Options{
		MaxConcurrentReconciles: cfg.maxConcurrent,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](cfg.backoffBase, cfg.backoffMax),
	}
	if cfg.logger != nil {
		copts.Logger = *cfg.logger
	}
	b := builder.ControllerManagedBy(mgr).
		Named(name).
		For(&authv1beta1.ResourceSlice{}, builder.WithPredicates(SlicePredicate(class, cfg.selector))).
		WithOptions(copts)
	if cfg.tenantRule {
		b = b.Watches(&authv1beta1.Tenant{}, crhandler.EnqueueRequestsFromMapFunc(r.SlicesForTenant),
			builder.WithPredicates(TenantPredicate()))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("class %q: building controller %q: %w", class, name, err)
	}
	return nil
}
