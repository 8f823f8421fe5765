package feed

import (
	"context"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Eviction (budget.WithEvictionAfter): the budget's feed, on the leader,
// deletes the ShadowPods its ledger names, those of a slice shrunk long
// enough ago whose pods still use more than it keeps. The deletion is
// Liqo's own way to end a pod on the provider: the ShadowPod goes, and
// with it the pod it made.

// Event reasons of eviction, recorded on the shrunk slice, regarding it
// and related to the ShadowPod.
const (
	reasonEvicted        = "Evicted"
	reasonEvictionFailed = "EvictionFailed"
	actionEvict          = "Evict"
)

// maxNote keeps event notes (cut at that many characters) under the events
// API's 1 kB limit.
const maxNote = 1000

// evictorName is the reporting controller of eviction events.
const evictorName = "sliceclass-budget"

// evictPeriod is how often the feed asks its ledger for the pods due,
// given the eviction delay d: a quarter of d, between 100ms and 1s; 1s
// when there is none yet (a SliceBudget's may be set at run time).
func evictPeriod(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Second
	}
	return min(max(d/4, 100*time.Millisecond), time.Second)
}

// evictor deletes the pods a ledger names.
type evictor struct {
	l      *ledger.Ledger
	writer client.Writer
	// recorder gives the recorder of eviction events, asked for once run
	// starts.
	recorder func() events.EventRecorder
}

// run asks l for the pods due every evictPeriod until ctx ends; no
// deletion starts after it has ended.
func (e evictor) run(ctx context.Context) {
	rec := e.recorder()
	t := time.NewTicker(evictPeriod(e.l.EvictionAfter()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			t.Reset(evictPeriod(e.l.EvictionAfter())) // it may change at run time
			for _, ev := range e.l.EvictionsDue(now) {
				if ctx.Err() != nil {
					return // stopped: no deletion starts after
				}
				e.evict(ctx, rec, ev)
			}
		}
	}
}

// evict deletes one ShadowPod, on condition that it is still the pod the
// ledger saw (same UID), and says so on its slice.
func (e evictor) evict(ctx context.Context, rec events.EventRecorder, ev ledger.Eviction) {
	pod := &metav1.PartialObjectMetadata{}
	pod.SetGroupVersionKind(offloadingv1beta1.SchemeGroupVersion.WithKind("ShadowPod"))
	pod.SetNamespace(ev.Pod.Namespace)
	pod.SetName(ev.Pod.Name)
	pod.SetUID(ev.PodUID)
	var opts []client.DeleteOption
	if ev.PodUID != "" {
		uid := ev.PodUID
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	slice := &authv1beta1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ev.Slice.Namespace, Name: ev.Slice.Name, UID: ev.SliceUID},
	}
	err := e.writer.Delete(ctx, pod, opts...)
	switch {
	case err == nil:
		rec.Eventf(slice, pod, corev1.EventTypeWarning, reasonEvicted, actionEvict, "%.*s",
			maxNote, fmt.Sprintf("deleted ShadowPod %s (%s); %s", ev.Pod, ledger.Amounts(ev.Charge), ev.Message))
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or another pod by that name now: the watch says.
	default:
		log.FromContext(ctx).Error(err, "cannot evict a ShadowPod; retrying", "budget", e.l.Name(),
			"ShadowPod", ev.Pod.String(), "ResourceSlice", ev.Slice.String())
		rec.Eventf(slice, pod, corev1.EventTypeWarning, reasonEvictionFailed, actionEvict, "%.*s",
			maxNote, fmt.Sprintf("cannot delete ShadowPod %s: %v (retried; the budget's role needs delete on shadowpods.offloading.liqo.io)",
				ev.Pod, err))
	}
}
