package resourceslice

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

// predicate passes the slice events a controller for the class must see:
//
//   - the slice matches the selector and is of the class, on the old OR the
//     new object, so a slice moving between classes (or out of the
//     selector) is seen by both controllers;
//   - on update, only relevant changes: generation (spec), labels, deletion,
//     finalizers, or the Authentication condition. Status writes to the
//     fields a class controller owns do not pass, so the controller's own
//     writes do not trigger it again;
//   - deletions of a matching slice, so what it held (budget, release hook)
//     is given back.
func (s scope) predicate() predicate.Predicate {
	matches := func(o client.Object) bool {
		rs, ok := o.(*authv1beta1.ResourceSlice)
		return ok && s.selects(rs)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return matches(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return matches(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return matches(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !matches(e.ObjectOld) && !matches(e.ObjectNew) {
				return false
			}
			return s.relevantChange(e.ObjectOld, e.ObjectNew)
		},
	}
}

func (s scope) relevantChange(oldObj, newObj client.Object) bool {
	o, ok1 := oldObj.(*authv1beta1.ResourceSlice)
	n, ok2 := newObj.(*authv1beta1.ResourceSlice)
	if !ok1 || !ok2 {
		return true
	}
	if o.Generation != n.Generation ||
		s.classOf(o) != s.classOf(n) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(o.Finalizers, n.Finalizers) {
		return true
	}
	oa, na := conditions.Get(o, authv1beta1.ResourceSliceConditionTypeAuthentication), conditions.Get(n, authv1beta1.ResourceSliceConditionTypeAuthentication)
	return !sliceconds.Equal(oa, na)
}

// tenantPredicate passes Tenant events that can change the tenant rule's
// verdict: creation, deletion, and updates of the tenant condition, the
// cluster ID or the labels.
func tenantPredicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*authv1beta1.Tenant)
			n, ok2 := e.ObjectNew.(*authv1beta1.Tenant)
			if !ok1 || !ok2 {
				return true
			}
			return o.Spec.TenantCondition != n.Spec.TenantCondition ||
				o.Spec.ClusterID != n.Spec.ClusterID ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels)
		},
	}
}
