package resourceslice

import (
	"context"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// tenantIndex is what the tenant rule reads: each namespace's Tenants, by
// UID, with their consumer ID and condition, kept by the class's Tenant
// source as events arrive. A reconcile then finds the slice's Tenant with a
// map lookup instead of a cache list (a deep copy of each Tenant, and a REST
// mapping per call with a namespaced cache). It is used once the source has
// started, which the controller waits for before its first reconcile; a
// reconciler without a controller (the test harness) lists instead.
type tenantIndex struct {
	mu   sync.RWMutex
	on   bool
	byNS map[string]map[types.UID]tenantEntry
}

type tenantEntry struct {
	consumer  string
	condition authv1beta1.TenantCondition
}

func newTenantIndex() *tenantIndex {
	return &tenantIndex{byNS: map[string]map[types.UID]tenantEntry{}}
}

func (x *tenantIndex) put(o client.Object) {
	t, ok := o.(*authv1beta1.Tenant)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.byNS[t.Namespace]
	if m == nil {
		m = map[types.UID]tenantEntry{}
		x.byNS[t.Namespace] = m
	}
	m[t.UID] = tenantEntry{consumer: t.Labels[labelRemoteClusterID], condition: t.Spec.TenantCondition}
}

func (x *tenantIndex) remove(o client.Object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.byNS[o.GetNamespace()]; m != nil {
		delete(m, o.GetUID())
		if len(m) == 0 {
			delete(x.byNS, o.GetNamespace())
		}
	}
}

// conditions returns the conditions of consumer's Tenants in namespace;
// ok is false while the index is not fed by a source.
func (x *tenantIndex) conditions(namespace, consumer string) (out []authv1beta1.TenantCondition, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.on {
		return nil, false
	}
	for _, e := range x.byNS[namespace] {
		if e.consumer == consumer {
			out = append(out, e.condition)
		}
	}
	return out, true
}

// tenantHandler feeds the index and enqueues the slices a Tenant change
// concerns. The initial list only feeds the index: every slice is enqueued
// by its own initial list already.
func (r *classReconciler) tenantHandler() crhandler.EventHandler {
	x := r.tenants
	x.mu.Lock()
	x.on = true
	x.mu.Unlock()
	mapped := crhandler.EnqueueRequestsFromMapFunc(r.slicesForTenant)
	type q = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return crhandler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, queue q) {
			x.put(e.Object)
			if !e.IsInInitialList {
				mapped.Create(ctx, e, queue)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, queue q) {
			x.put(e.ObjectNew)
			mapped.Update(ctx, e, queue)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, queue q) {
			x.remove(e.Object)
			mapped.Delete(ctx, e, queue)
		},
	}
}
