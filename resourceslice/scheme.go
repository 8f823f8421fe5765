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

// AddToScheme adds to s what the SDK reads and writes through a manager's
// client and cache: Liqo's authentication.liqo.io/v1beta1 (ResourceSlice,
// Tenant), Liqo's offloading.liqo.io/v1beta1 Quota (only it: ShadowPods are
// read through a cache of the SDK's own), coordination.k8s.io/v1 (class
// Leases, the unserved reporter) and sliceclass.io/v1alpha1 (SliceBudget,
// budget.FromObject). Call it with client-go's, before building the
// manager:
//
//	scheme := runtime.NewScheme()
//	utilruntime.Must(clientgoscheme.AddToScheme(scheme)) // core types: a node pool's Nodes and Pods
//	utilruntime.Must(resourceslice.AddToScheme(scheme))
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme})
//
// Adding the types twice is harmless.
func AddToScheme(s *runtime.Scheme) error { return sdkscheme.Add(s) }

// schemeNeeds names what a registration reads and writes.
type schemeNeeds struct {
	tenants, quotas, leases bool
}

// check returns an error naming every kind s lacks of those needs names
// (the ResourceSlice always), and the call that adds them.
func (n schemeNeeds) check(s *runtime.Scheme) error {
	const call = "resourceslice.AddToScheme(scheme)"
	needs := []sdkscheme.Need{{GVK: authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind), Call: call}}
	if n.tenants {
		needs = append(needs, sdkscheme.Need{GVK: authv1beta1.GroupVersion.WithKind(authv1beta1.TenantKind), Call: call})
	}
	if n.quotas {
		needs = append(needs, sdkscheme.Need{GVK: offloadingv1beta1.SchemeGroupVersion.WithKind(feed.QuotaKind.Kind), Call: call})
	}
	if n.leases {
		needs = append(needs, sdkscheme.Need{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Call: call})
	}
	return sdkscheme.Check(s, needs...)
}

// schemeNeedsOf is what a class built with cfg reads and writes.
func schemeNeedsOf(cfg *config) schemeNeeds {
	return schemeNeeds{tenants: cfg.tenantRule, quotas: len(cfg.budgets) > 0, leases: cfg.leaseNamespace != ""}
}
