package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// variant says what a baseline does besides its one patch per decision.
type variant struct {
	// informer: a cache also watches the slices, as any controller's does.
	informer bool
	// events: one event per decision through client-go's events broadcaster,
	// as a class controller records on each decision.
	events bool
}

// baseline makes the same n decisions with w goroutines, each one
// optimistic status patch through a plain client and, by default, nothing
// else. It returns the decisions per second and this process's CPU per
// decision.
func baseline(ctx context.Context, cp *controlplane.ControlPlane, n int, ns string, w int, v variant) (float64, time.Duration, error) {
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		return 0, 0, err
	}
	if err := createMany(ctx, cp.Client, ns, n, func(int) string { return "baseline" }, false); err != nil {
		return 0, 0, err
	}
	var list authv1beta1.ResourceSliceList
	if err := cp.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	if v.informer {
		c, err := cache.New(cp.Config, cache.Options{Scheme: cp.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
		if err != nil {
			return 0, 0, err
		}
		if _, err := c.GetInformer(ctx, &authv1beta1.ResourceSlice{}); err != nil {
			return 0, 0, err
		}
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() { _ = c.Start(cctx) }()
		if !c.WaitForCacheSync(cctx) {
			return 0, 0, errors.New("baseline informer did not sync")
		}
	}
	var rec events.EventRecorder = discardEvents{}
	if v.events {
		cs, err := kubernetes.NewForConfig(cp.Config)
		if err != nil {
			return 0, 0, err
		}
		b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
		bctx, stop := context.WithCancel(ctx)
		defer stop()
		if err := b.StartRecordingToSinkWithContext(bctx); err != nil {
			return 0, 0, err
		}
		defer b.Shutdown()
		rec = b.NewRecorder(cp.Scheme, "bench-baseline")
	}
	cpu0 := cpuTime()
	var first atomic.Int64 // when the first write was answered (UnixNano)
	if err := parallel(w, len(list.Items), func(i int) error {
		cur := &list.Items[i]
		desired := cur.DeepCopy()
		desired.Status.Resources = desired.Spec.Resources.DeepCopy()
		conditions.Accept(desired, "Granted", "granted as requested")
		if err := cp.Client.Status().Patch(ctx, desired, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		first.CompareAndSwap(0, time.Now().UnixNano())
		rec.Eventf(desired, nil, corev1.EventTypeNormal, "Granted", "Decide", "granted as requested")
		return nil
	}); err != nil {
		return 0, 0, err
	}
	// From the first write answered to the last, as ours is timed from its
	// first decision to its last.
	took := time.Since(time.Unix(0, first.Load()))
	if v.informer || v.events {
		// Let the informer and the broadcaster finish the work they are owed.
		time.Sleep(500 * time.Millisecond)
	}
	return float64(len(list.Items)-1) / took.Seconds(), (cpuTime() - cpu0) / time.Duration(len(list.Items)), nil
}

// discardEvents drops events: the recorder of the baselines that record none.
type discardEvents struct{}

func (discardEvents) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}
