// Package grantwatch is a test helper of this module: an independent
// observer that watches a namespace's ResourceSlices and Liqo's Quotas on
// the API server and checks, at every event, that what the provider grants
// never exceeds a budget, and the way to run Liqo's own QuotaCreator beside
// a class controller. The integration and reliability suites share it.
package grantwatch

import (
	"context"
	"fmt"
	"sync"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// Watcher checks, at every slice or Quota event in one namespace, that the
// Quotas of live slices, and per live slice the larger of its Quota and
// its Accepted offer, sum to at most the limit (CPU).
type Watcher struct {
	limit resource.Quantity

	mu         sync.Mutex
	slices     map[string]*authv1beta1.ResourceSlice
	quotas     map[string]*offloadingv1beta1.Quota
	events     int
	violations []string
	peak       resource.Quantity
}

// Watch starts a Watcher on namespace ns of the API server cfg reaches
// (scheme must hold Liqo's authentication and offloading types); it stops
// when the test ends.
func Watch(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, ns, limit string) *Watcher {
	t.Helper()
	w := &Watcher{limit: resource.MustParse(limit), slices: map[string]*authv1beta1.ResourceSlice{}, quotas: map[string]*offloadingv1beta1.Quota{}}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	sw, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns))
	require.NoError(t, err)
	qw, err := wc.Watch(ctx, &offloadingv1beta1.QuotaList{}, client.InNamespace(ns))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc, qc := sw.ResultChan(), qw.ResultChan()
		for sc != nil || qc != nil {
			select {
			case ev, ok := <-sc:
				if !ok {
					sc = nil
					continue
				}
				w.observe(ev)
			case ev, ok := <-qc:
				if !ok {
					qc = nil
					continue
				}
				w.observe(ev)
			}
		}
	}()
	t.Cleanup(func() {
		sw.Stop()
		qw.Stop()
		cancel()
		<-done
	})
	return w
}

func (w *Watcher) observe(ev watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	var what string
	switch o := ev.Object.(type) {
	case *authv1beta1.ResourceSlice:
		what = "slice " + o.Name
		if ev.Type == watch.Deleted {
			delete(w.slices, o.Name)
		} else {
			w.slices[o.Name] = o
		}
	case *offloadingv1beta1.Quota:
		what = "Quota " + o.Name
		if ev.Type == watch.Deleted {
			delete(w.quotas, o.Name)
		} else {
			w.quotas[o.Name] = o
		}
	default:
		return
	}
	quotas, granted := w.grantedLocked()
	if granted.Cmp(w.peak) > 0 {
		w.peak = granted
	}
	if quotas.Cmp(w.limit) > 0 || granted.Cmp(w.limit) > 0 {
		w.violations = append(w.violations, fmt.Sprintf("after %s %s: Quotas of live slices enforce %s CPU, the provider grants %s, budget %s",
			ev.Type, what, quotas.String(), granted.String(), w.limit.String()))
	}
}

// grantedLocked sums the CPU the Quotas of live slices enforce, and per
// live slice the larger of its Quota and its Accepted offer.
func (w *Watcher) grantedLocked() (quotas, granted resource.Quantity) {
	byOwner := map[types.UID]resource.Quantity{}
	for _, q := range w.quotas {
		if owner := metav1.GetControllerOf(q); owner != nil {
			byOwner[owner.UID] = q.Spec.Resources[corev1.ResourceCPU]
		}
	}
	for _, rs := range w.slices {
		q, hasQuota := byOwner[rs.UID]
		g := resource.Quantity{}
		if hasQuota {
			quotas.Add(q)
			g = q
		}
		if conditions.IsAccepted(rs) {
			if a := rs.Status.Resources[corev1.ResourceCPU]; a.Cmp(g) > 0 {
				g = a
			}
		}
		granted.Add(g)
	}
	return quotas, granted
}

// Check fails the test if the provider ever granted more than the limit,
// and logs how many events were watched and the peak.
func (w *Watcher) Check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.violations, "the provider granted more than the budget (%d events watched)", w.events)
	t.Logf("grant watcher: %d events, peak granted %s of %s CPU", w.events, w.peak.String(), w.limit.String())
}

// RunLiqoQuotas registers Liqo v1.2.0's own QuotaCreatorReconciler in mgr
// (envkit.AddLiqoQuotaCreator): a Quota (Hard limits) for each Accepted
// replicated slice, which is what the grants a Watcher checks are made of.
func RunLiqoQuotas(mgr manager.Manager) error {
	return envkit.AddLiqoQuotaCreator(mgr)
}
