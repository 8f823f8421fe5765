package resourceslice

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sliceclass/sliceclass/internal/feed"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
)

// The scheme is the user's: the SDK reads it and never writes it. A
// manager's caches read its scheme from the moment it starts, and a class
// may be served later (ClassSet.Serve, mgr.Add), so a library that added
// its types on first use would write a map the caches read. The user's
// main builds the scheme once, before the manager, as every kubebuilder
// main does with its groups' AddToScheme; each registration checks that
// what it will read and write is there, and names the call to add.

// What a manager's scheme needs, each group added by its own AddToScheme as
// in every kubebuilder main (clientgoscheme.AddToScheme adds the core types
// a node pool reads and coordination.k8s.io/v1, whose Leases class Leases
// and the unserved reporter write):
//
//	scheme := runtime.NewScheme()
//	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
//	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
//	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
//	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets (budget.FromObject)
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme})

// schemeNeeds names what a registration reads and writes.
type schemeNeeds struct {
	tenants, quotas, leases bool
}

// check returns an error naming every kind s lacks of those needs names
// (the ResourceSlice always), and the call that adds them.
func (n schemeNeeds) check(s *runtime.Scheme) error {
	const liqo = "authv1beta1.AddToScheme(scheme)"
	needs := []sdkscheme.Need{{GVK: authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind), Call: liqo}}
	if n.tenants {
		needs = append(needs, sdkscheme.Need{GVK: authv1beta1.GroupVersion.WithKind(authv1beta1.TenantKind), Call: liqo})
	}
	if n.quotas {
		needs = append(needs, sdkscheme.Need{GVK: offloadingv1beta1.SchemeGroupVersion.WithKind(feed.QuotaKind.Kind),
			Call: "offloadingv1beta1.AddToScheme(scheme)"})
	}
	if n.leases {
		needs = append(needs, sdkscheme.Need{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Call: "clientgoscheme.AddToScheme(scheme)"})
	}
	return sdkscheme.Check(s, needs...)
}

// schemeNeedsOf is what a class built with cfg reads and writes.
func schemeNeedsOf(cfg *config) schemeNeeds {
	return schemeNeeds{tenants: cfg.tenantRule, quotas: len(cfg.budgets) > 0, leases: cfg.leaseNamespace != ""}
}
