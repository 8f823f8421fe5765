package resourceslice

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// consumerID returns the cluster ID the slice claims for its consumer:
// spec.consumerClusterID, or else the liqo.io/originID label. Both are set by
// the consumer; the reconciler trusts them only when they agree with the
// slice's namespace (see docs/trust.md).
func consumerID(rs *authv1beta1.ResourceSlice) string {
	if rs == nil {
		return ""
	}
	if id := rs.Spec.ConsumerClusterID; id != nil && *id != "" {
		return string(*id)
	}
	return rs.Labels[labelOriginID]
}

func tenantClusterID(t *authv1beta1.Tenant) string {
	if t.Spec.ClusterID != "" {
		return string(t.Spec.ClusterID)
	}
	return t.Labels[labelRemoteClusterID]
}

// severity orders tenant conditions from least to most restrictive.
func severity(c authv1beta1.TenantCondition) int {
	switch c {
	case authv1beta1.TenantConditionDrained:
		return 2
	case authv1beta1.TenantConditionCordoned:
		return 1
	default:
		return 0
	}
}

// trustedConsumer finds the slice's consumer from what the consumer cannot
// forge: its namespace's liqo.io/remote-cluster-id label, set by the
// provider's Liqo on every tenant namespace, when present. mismatch names
// the disagreement when the slice's own claims (spec.consumerClusterID, the
// liqo.io/originID label) contradict the namespace or each other.
func (r *classReconciler) trustedConsumer(ctx context.Context, rs *authv1beta1.ResourceSlice) (id, mismatch string, err error) {
	c, ok := ctx.Value(consumerKey{}).(consumerInfo)
	if !ok {
		if c, err = r.consumerOf(ctx, rs); err != nil {
			return "", "", err
		}
	}
	var nsID string
	if c.Labelled {
		nsID = c.ID
	}
	var spec string
	if c := rs.Spec.ConsumerClusterID; c != nil {
		spec = string(*c)
	}
	origin := rs.Labels[labelOriginID]
	claims := []struct{ what, id string }{
		{"the namespace's " + labelRemoteClusterID + " label", nsID},
		{"the " + labelOriginID + " label", origin},
		{"spec.consumerClusterID", spec},
	}
	var first string
	for _, c := range claims {
		switch {
		case c.id == "":
		case id == "":
			id, first = c.id, c.what
		case c.id != id:
			return id, fmt.Sprintf("%s says %q but %s says %q", first, id, c.what, c.id), nil
		}
	}
	return id, "", nil
}

// tenantCondition finds the slice's Tenant the way Liqo does (label
// liqo.io/remote-cluster-id = consumer ID, in the slice's namespace) and
// returns its condition; "" when there is no Tenant. When several match, the
// most restrictive wins.
func (r *classReconciler) tenantCondition(ctx context.Context, rs *authv1beta1.ResourceSlice, id string) (authv1beta1.TenantCondition, error) {
	if id == "" {
		return "", nil
	}
	found, ok := r.tenants.conditions(rs.Namespace, id)
	if !ok {
		var tenants authv1beta1.TenantList
		if err := r.client.List(ctx, &tenants, client.InNamespace(rs.Namespace),
			client.MatchingLabels{labelRemoteClusterID: id}); err != nil {
			return "", fmt.Errorf("listing Tenants of consumer %q in namespace %q: %w", id, rs.Namespace, err)
		}
		for i := range tenants.Items {
			found = append(found, tenants.Items[i].Spec.TenantCondition)
		}
	}
	var worst authv1beta1.TenantCondition
	for _, c := range found {
		if c == "" {
			c = authv1beta1.TenantConditionActive
		}
		if worst == "" || severity(c) > severity(worst) {
			worst = c
		}
	}
	return worst, nil
}

// slicesForTenant maps a Tenant to the requests for the slices this
// controller serves in the Tenant's namespace that belong to its consumer.
// AddToManager wires it to the Tenant watch; use it when wiring your own
// controller. It lists the namespace from the reader the reconciler was
// built with (the cache, with a manager): a Tenant's namespace holds its
// consumer's slices only, so no extra index is kept.
func (r *classReconciler) slicesForTenant(ctx context.Context, obj client.Object) []reconcile.Request {
	t, ok := obj.(*authv1beta1.Tenant)
	if !ok {
		return nil
	}
	id := tenantClusterID(t)
	if id == "" {
		return nil
	}
	var slices authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &slices, client.InNamespace(t.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "cannot list ResourceSlices for Tenant; its slices are re-evaluated on their next change",
			"tenant", client.ObjectKeyFromObject(t), "class", r.scope.class)
		return nil
	}
	var reqs []reconcile.Request
	for i := range slices.Items {
		rs := &slices.Items[i]
		if !r.scope.serves(rs) || consumerID(rs) != id {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}})
	}
	return reqs
}

// slicesInNamespace maps a Namespace (its metadata) to the requests for the
// slices this controller serves in it: a change of the namespace's
// liqo.io/remote-cluster-id label changes whom its slices belong to.
// AddToManager wires it to a metadata-only watch of Namespaces, which also
// makes the manager's cache hold the namespace labels the reconciler reads.
func (r *classReconciler) slicesInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var slices authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &slices, client.InNamespace(obj.GetName())); err != nil {
		log.FromContext(ctx).Error(err, "cannot list ResourceSlices for a namespace change; they are re-evaluated on their next change",
			"namespace", obj.GetName(), "class", r.scope.class)
		return nil
	}
	var reqs []reconcile.Request
	for i := range slices.Items {
		if r.scope.serves(&slices.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&slices.Items[i])})
		}
	}
	return reqs
}

// namespacePredicate passes namespace events that can change whom a
// namespace's slices belong to: creation, deletion, and changes of the
// liqo.io/remote-cluster-id label.
func namespacePredicate() predicate.Predicate {
	return predicate.Funcs{
		// A namespace's creation (and the initial list) brings no slice the
		// slices' own events do not; its deletion deletes them.
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetLabels()[labelRemoteClusterID] != e.ObjectNew.GetLabels()[labelRemoteClusterID]
		},
	}
}
