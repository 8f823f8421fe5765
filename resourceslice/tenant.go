package resourceslice

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConsumerID returns the cluster ID of the consumer that asked for the
// slice: spec.consumerClusterID, or else the liqo.io/originID label.
func ConsumerID(rs *authv1beta1.ResourceSlice) string {
	if rs == nil {
		return ""
	}
	if id := rs.Spec.ConsumerClusterID; id != nil && *id != "" {
		return string(*id)
	}
	return rs.Labels[LabelOriginID]
}

func tenantClusterID(t *authv1beta1.Tenant) string {
	if t.Spec.ClusterID != "" {
		return string(t.Spec.ClusterID)
	}
	return t.Labels[LabelRemoteClusterID]
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

// tenantCondition finds the slice's Tenant the way Liqo does (label
// liqo.io/remote-cluster-id = consumer ID, in the slice's namespace) and
// returns its condition; "" when there is no Tenant. When several match, the
// most restrictive wins.
func (r *Reconciler) tenantCondition(ctx context.Context, rs *authv1beta1.ResourceSlice) (authv1beta1.TenantCondition, error) {
	id := ConsumerID(rs)
	if id == "" {
		return "", nil
	}
	var tenants authv1beta1.TenantList
	if err := r.client.List(ctx, &tenants, client.InNamespace(rs.Namespace),
		client.MatchingLabels{LabelRemoteClusterID: id}); err != nil {
		return "", fmt.Errorf("listing Tenants of consumer %q in namespace %q: %w", id, rs.Namespace, err)
	}
	var worst authv1beta1.TenantCondition
	for i := range tenants.Items {
		c := tenants.Items[i].Spec.TenantCondition
		if c == "" {
			c = authv1beta1.TenantConditionActive
		}
		if worst == "" || severity(c) > severity(worst) {
			worst = c
		}
	}
	return worst, nil
}

// SlicesForTenant maps a Tenant to the requests for the slices this
// controller serves in the Tenant's namespace that belong to its consumer.
// AddToManager wires it to the Tenant watch; use it when wiring your own
// controller. It lists the namespace from the reader the Reconciler was
// built with (the cache, with a manager): a Tenant's namespace holds its
// consumer's slices only, so no extra index is kept.
func (r *Reconciler) SlicesForTenant(ctx context.Context, obj client.Object) []reconcile.Request {
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
		if !r.scope.serves(rs) || ConsumerID(rs) != id {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}})
	}
	return reqs
}
