package envkit

import (
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	quotacreator "github.com/liqotech/liqo/pkg/liqo-controller-manager/quotacreator-controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// AddLiqoQuotaCreator registers Liqo v1.2.0's own QuotaCreatorReconciler
// in mgr, as the provider's liqo-controller-manager runs it: for each
// Accepted replicated slice, a Quota (offloading.liqo.io, hard limits) of
// what the slice was granted. A budget counts those Quotas; run it beside
// your classes in a test of what a consumer may actually use:
//
//	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
//		if err := envkit.AddLiqoQuotaCreator(mgr); err != nil {
//			return err
//		}
//		return resourceslice.AddToManager(mgr, "gold", h, resourceslice.WithBudget(b))
//	})
//
// mgr's scheme must hold Liqo's authentication and offloading types
// (a control plane's Scheme does).
func AddLiqoQuotaCreator(mgr manager.Manager) error {
	r := quotacreator.NewQuotaCreatorReconciler(mgr.GetClient(), mgr.GetScheme(),
		mgr.GetEventRecorderFor("liqo-quotacreator"), offloadingv1beta1.HardLimitsEnforcement) //nolint:staticcheck // Liqo's constructor takes the old recorder
	return r.SetupWithManager(mgr)
}
