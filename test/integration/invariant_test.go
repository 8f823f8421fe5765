package integration

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
)

// holdWatcher is the invariant of a budget whose slices' pods run
// (issue 27), checked by an observer independent of the SDK: it watches
// every ResourceSlice of the classes, Liqo's Quotas and the ShadowPods on
// the API server and, at every event, checks that the sum over the live
// slices of max(Accepted offer, Quota, what its pods use) stays within the
// budget's CPU. A slice's pods are the running ShadowPods labelled with its
// Quota's user, charged as Liqo's webhook charges them.
type holdWatcher struct {
	limit   resource.Quantity
	classes map[string]bool

	mu         sync.Mutex
	slices     map[types.NamespacedName]*authv1beta1.ResourceSlice
	quotas     map[types.NamespacedName]*offloadingv1beta1.Quota
	pods       map[types.NamespacedName]*offloadingv1beta1.ShadowPod
	events     int
	violations []string
	peak       resource.Quantity
	// offers are the CPU offers each slice showed, in order, each change once.
	offers map[string][]string
}

func watchHolds(t *testing.T, limit string, classes ...string) *holdWatcher {
	t.Helper()
	w := &holdWatcher{
		limit: resource.MustParse(limit), classes: map[string]bool{},
		slices: map[types.NamespacedName]*authv1beta1.ResourceSlice{},
		quotas: map[types.NamespacedName]*offloadingv1beta1.Quota{},
		pods:   map[types.NamespacedName]*offloadingv1beta1.ShadowPod{},
		offers: map[string][]string{},
	}
	for _, c := range classes {
		w.classes[c] = true
	}
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, list := range []client.ObjectList{&authv1beta1.ResourceSliceList{}, &offloadingv1beta1.QuotaList{}, &offloadingv1beta1.ShadowPodList{}} {
		wi, err := wc.Watch(ctx, list)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range wi.ResultChan() {
				w.observe(ev.Type, ev.Object)
			}
		}()
		t.Cleanup(wi.Stop)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return w
}

func (w *holdWatcher) observe(typ watch.EventType, o runtime.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(obj)
	gone := typ == watch.Deleted
	switch x := o.(type) {
	case *authv1beta1.ResourceSlice:
		if !w.classes[string(x.Spec.Class)] {
			return
		}
		if gone {
			delete(w.slices, key)
		} else {
			w.slices[key] = x
			offer := "none"
			if conditions.IsAccepted(x) {
				offer = x.Status.Resources.Cpu().String()
			}
			if seen := w.offers[x.Name]; len(seen) == 0 || seen[len(seen)-1] != offer {
				w.offers[x.Name] = append(seen, offer)
			}
		}
	case *offloadingv1beta1.Quota:
		if gone {
			delete(w.quotas, key)
		} else {
			w.quotas[key] = x
		}
	case *offloadingv1beta1.ShadowPod:
		if gone {
			delete(w.pods, key)
		} else {
			w.pods[key] = x
		}
	default:
		return
	}
	w.events++
	held := w.heldLocked()
	if held.Cmp(w.peak) > 0 {
		w.peak = held
	}
	if held.Cmp(w.limit) > 0 {
		w.violations = append(w.violations, fmt.Sprintf("after %s of %T %s: the slices hold %s CPU (offers, Quotas, pods in use), budget %s",
			typ, o, key, held.String(), w.limit.String()))
	}
}

// heldLocked is Σ over live slices of max(offer, Quota, in use), in CPU.
func (w *holdWatcher) heldLocked() resource.Quantity {
	var held resource.Quantity
	for key, rs := range w.slices {
		most := resource.Quantity{}
		if conditions.IsAccepted(rs) {
			most = rs.Status.Resources.Cpu().DeepCopy()
		}
		for _, q := range w.quotas {
			owner := metav1.GetControllerOf(q)
			if q.Namespace != key.Namespace || owner == nil || owner.UID != rs.UID {
				continue
			}
			if c := q.Spec.Resources.Cpu(); c.Cmp(most) > 0 {
				most = c.DeepCopy()
			}
			var use resource.Quantity
			for _, p := range w.pods {
				if p.Labels["liqo.io/creator-user"] != q.Spec.User || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					continue
				}
				for _, c := range p.Spec.Pod.Containers { // the tests' pods have no init containers
					use.Add(*c.Resources.Requests.Cpu())
				}
			}
			if use.Cmp(most) > 0 {
				most = use
			}
		}
		held.Add(most)
	}
	return held
}

// check asserts that the invariant held at every event.
func (w *holdWatcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.violations, "the budget was over-committed counting pods in use (%d events watched)", w.events)
	t.Logf("hold watcher: %d events, peak held %s of %s CPU", w.events, w.peak.String(), w.limit.String())
}

// offersOf are the CPU offers the slice name showed, each change once
// ("none" while not Accepted).
func (w *holdWatcher) offersOf(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.offers[name]...)
}
