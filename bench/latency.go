package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// latencyTargetRate and latencyTarget are the steady-state target: the
// p99 from creation to decision at 20 slices/s.
const (
	latencyTargetRate = 20
	latencyTarget     = 25 * time.Millisecond
)

// latencyNamespace holds the steady state's slices.
const latencyNamespace = "bench-latency"

// latencyPhase runs a manager serving class-0 and adds the create→decision
// percentiles at f.rate to t, the p99 as a target at latencyTargetRate.
func latencyPhase(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table) error {
	reg := prometheus.NewRegistry()
	mgr, err := newManager(cp, func(o *manager.Options) {
		// Cache only the steady state's namespace, as the throughput rounds
		// do: the rounds' slices left behind are an artefact of the bench,
		// and caching them would weigh on the GC the p99 measures.
		o.Cache.DefaultNamespaces = map[string]cache.Config{latencyNamespace: {}}
	})
	if err != nil {
		return err
	}
	if err := resourceslice.AddToManager(mgr, "class-0", acceptAll(), resourceslice.WithMaxConcurrentReconciles(f.perClass()), resourceslice.WithMetricsRegisterer(reg)); err != nil {
		return err
	}
	mctx, stopMgr := context.WithCancel(ctx)
	defer stopMgr()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mctx) }()
	// The controller's informer starts with the controller: wait for it (and
	// its initial list of every earlier round's slices), not just for the
	// informers that existed at start (none, since AddToManager stopped
	// registering a field index). Otherwise the first slices measured wait
	// behind the initial list.
	if _, err := mgr.GetCache().GetInformer(mctx, &authv1beta1.ResourceSlice{}); err != nil {
		return err
	}
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		return errors.New("manager cache did not sync")
	}

	end := t.loads.start("the steady state")
	say("steady state: %d slices at %g/s...", f.latencyN, f.rate)
	p50, p99, err := latency(ctx, cp, f)
	if err != nil {
		return err
	}
	end()
	p99Metric := fmt.Sprintf("create→decision p99 (%g slices/s)", f.rate)
	if f.rate == latencyTargetRate {
		t.target(p99Metric, ms(p99), "≤ "+latencyTarget.String(), p99 <= latencyTarget)
	} else {
		t.add(p99Metric+fmt.Sprintf(" (the target is at %d/s)", latencyTargetRate), ms(p99))
	}
	t.add(fmt.Sprintf("create→decision p50 (%g slices/s)", f.rate), ms(p50))
	stopMgr()
	if err := <-mgrDone; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// latency creates slices at f.rate while the manager runs (they land in
// class-0) and measures create→decision from a watch.
func latency(ctx context.Context, cp *controlplane.ControlPlane, f flags) (p50, p99 time.Duration, err error) {
	const ns = latencyNamespace
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		return 0, 0, err
	}
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		return 0, 0, err
	}
	w, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns))
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	var mu sync.Mutex
	created, decided := map[string]time.Time{}, map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			rs, ok := ev.Object.(*authv1beta1.ResourceSlice)
			if !ok || seen[rs.Name] || !conditions.IsDecided(rs) {
				continue
			}
			seen[rs.Name] = true
			mu.Lock()
			decided[rs.Name] = time.Now()
			n := len(decided)
			mu.Unlock()
			if n == f.latencyN {
				return
			}
		}
	}()
	interval := time.Duration(float64(time.Second) / f.rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := range f.latencyN {
		<-tick.C
		rs := realisticSlice(ns, fmt.Sprintf("l-%05d", i), "class-0", false)
		if err := slicetest.CreateAsLiqo(ctx, cp.Client, rs); err != nil {
			return 0, 0, err
		}
		// The slice becomes decidable once Liqo authenticated it: now.
		mu.Lock()
		created[rs.Name] = time.Now()
		mu.Unlock()
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		return 0, 0, errors.New("steady state: not every slice was decided within 2 minutes")
	}
	// A decision can reach the watch before the authentication write's
	// response reaches us (2 shared cores): that latency counts as zero.
	lat := make([]time.Duration, 0, len(decided))
	mu.Lock()
	for name, at := range decided {
		lat = append(lat, max(0, at.Sub(created[name])))
	}
	mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[(len(lat)*99)/100-1+boolInt(len(lat) < 100)], nil
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
