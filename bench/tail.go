package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// The tail phase (issue 43, item 6), opt-in with -tail-only: the
// steady-state latency after a backlog. In each of -rounds rounds, each
// variant in turn (the order rotating by round) gets a namespace of its
// own holding a backlog of -tail-backlog undecided slices, starts, decides
// the backlog, and at once -tail-n slices are created at -rate while it
// runs; create→decision is timed from a watch as in the steady state
// (latency.go). The variants, each in this process with -workers workers:
//   - ours with the SDK's defaults (an event per decision);
//   - ours with DecisionEventsNone;
//   - the baseline: a bare informer on the namespace's slices and a
//     workqueue whose workers make the one optimistic status patch of
//     baseline.go, nothing else.
//
// To find whose the tail is, each slice is timed at each step: Liqo's
// authentication write answered (created); the controller's informer
// delivering it (an event handler of the bench's on the same informer);
// the handler called (ours: the bench's handler; the baseline: its worker
// taking the key); the status PATCH sent and answered (a wrapper around the
// variant's HTTP transport); the decision reaching the bench's watch. For
// the slices slower than -tail-slow the table gives the median split and
// the slowest slice's, and for the window (first creation to last
// decision) the Go GC's cycles and pauses in this process
// (runtime/metrics), which hosts the controller, the load and the watch,
// and the status PATCHes as the API server timed them (its own histogram):
// a PATCH slow for its client but not for the server waited on this
// machine's CPU, not on the API server or etcd.

// tailVariant is one of the tail phase's variants.
type tailVariant struct {
	name string
	// baseline: the bare informer + patch loop, not ours.
	baseline bool
	events   resourceslice.DecisionEvents
	// process: the example manager, built and run as a process of its own
	// (-tail-process), as the side by side runs it, with leader election.
	// Its steps inside the process are not seen: its own metrics split
	// the window instead (procWindow).
	process bool
}

// tailProcessVariant is the variant -tail-process adds.
var tailProcessVariant = tailVariant{name: "example manager (own process, leader election, events all)", process: true}

// tailProc is what the process variant needs: the example manager's
// binary, a kubeconfig of the control plane, a directory for its logs.
type tailProc struct{ bin, kubeconfig, dir string }

var tailVariants = []tailVariant{
	{name: "ours (events all, the default)", events: resourceslice.DecisionEventsAll},
	{name: "ours (events none)", events: resourceslice.DecisionEventsNone},
	{name: "bare informer + status patch", baseline: true},
}

// tailStep is a step of a slice's way from creation to decision.
type tailStep int

const (
	stepCreated    tailStep = iota // the authentication write answered
	stepSeen                       // the controller's informer delivered it, undecided
	stepHandled                    // the handler called (ours) or the worker took it (baseline)
	stepPatchStart                 // the status PATCH sent (the last one, with retries)
	stepPatchEnd                   // its answer received
	stepDecided                    // the decision seen by the bench's watch
	tailSteps
)

// tailSplit names the stretches between consecutive steps.
var tailSplit = [...]string{"informer", "queue", "reconcile", "PATCH", "watch"}

// tailTimes holds when each slice of one namespace reached each step.
type tailTimes struct {
	ns string
	mu sync.Mutex
	at map[string]*[tailSteps]time.Time
	// patches counts each slice's status PATCHes.
	patches map[string]int
}

func newTailTimes(ns string) *tailTimes {
	return &tailTimes{ns: ns, at: map[string]*[tailSteps]time.Time{}, patches: map[string]int{}}
}

// patched counts a status PATCH of slice name.
func (tt *tailTimes) patched(name string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.patches[name]++
}

// patchCount is how many status PATCHes slice name had.
func (tt *tailTimes) patchCount(name string) int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.patches[name]
}

// mark records that slice name reached step at t; first keeps an earlier
// record, otherwise the latest wins.
func (tt *tailTimes) mark(name string, step tailStep, t time.Time, first bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	a, ok := tt.at[name]
	if !ok {
		a = &[tailSteps]time.Time{}
		tt.at[name] = a
	}
	if first && !a[step].IsZero() {
		return
	}
	a[step] = t
}

// get returns slice name's steps.
func (tt *tailTimes) get(name string) [tailSteps]time.Time {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if a, ok := tt.at[name]; ok {
		return *a
	}
	return [tailSteps]time.Time{}
}

// observe is the informer's event handler: an undecided, authenticated
// slice of the namespace is seen now (the latest such event counts).
func (tt *tailTimes) observe(obj any) {
	rs, ok := obj.(*authv1beta1.ResourceSlice)
	if ok && rs.Namespace == tt.ns && conditions.IsAuthenticated(rs) && !conditions.IsDecided(rs) {
		tt.mark(rs.Name, stepSeen, time.Now(), false)
	}
}

// wrap times the status PATCHes of the namespace's slices sent through rt.
func (tt *tailTimes) wrap(rt http.RoundTripper) http.RoundTripper {
	return patchTimer{rt: rt, tt: tt}
}

type patchTimer struct {
	rt http.RoundTripper
	tt *tailTimes
}

// RoundTrip times a status PATCH of a slice of the namespace, from the
// request sent to the response's headers; other requests pass untimed.
func (p patchTimer) RoundTrip(req *http.Request) (*http.Response, error) {
	name, ok := p.tt.statusPatch(req)
	if !ok {
		return p.rt.RoundTrip(req)
	}
	start := time.Now()
	resp, err := p.rt.RoundTrip(req)
	p.tt.mark(name, stepPatchStart, start, false)
	p.tt.mark(name, stepPatchEnd, time.Now(), false)
	p.tt.patched(name)
	return resp, err
}

// statusPatch returns the slice a request patches the status of, if it is
// a status PATCH of a slice of the namespace.
func (tt *tailTimes) statusPatch(req *http.Request) (string, bool) {
	if req.Method != http.MethodPatch {
		return "", false
	}
	// .../namespaces/<ns>/resourceslices/<name>/status
	parts := strings.Split(strings.TrimSuffix(req.URL.Path, "/"), "/")
	n := len(parts)
	if n < 5 || parts[n-1] != "status" || parts[n-3] != "resourceslices" || parts[n-4] != tt.ns || parts[n-5] != "namespaces" {
		return "", false
	}
	return parts[n-2], true
}

// tailResult is one variant's figures in one round.
type tailResult struct {
	// p50, p90, p99 and max create→decision, in ms.
	p50, p90, p99, max float64
	// slow counts the slices slower than the threshold; slowSplit is the
	// median of each stretch over them (ms), worst the slowest slice's
	// stretches and total.
	slow         int
	slowSplit    []float64
	worst        []float64
	worstTotal   float64
	worstPatches int
	gc           gcWindow
	// server counts the slices' status PATCHes in the window as the API
	// server timed them (apiserver_request_duration_seconds): all, over
	// 50 ms, over 100 ms.
	server serverPatches
	// proc is the process variant's window, from its own metrics.
	proc procWindow
}

// serverPatches is a reading, or a window's difference, of the API
// server's own histogram of the slices' status PATCHes.
type serverPatches struct{ all, over50, over100 int }

// readServerPatches reads the API server's histogram of status PATCHes of
// ResourceSlices: the count, and the counts over 50 and 100 ms.
func readServerPatches(ctx context.Context, cp *controlplane.ControlPlane) (serverPatches, error) {
	bucket := func(le string) (int, error) {
		want := []string{`verb="PATCH"`, `resource="resourceslices"`, `subresource="status"`, `le="` + le + `"`}
		return apiserver.MetricSum(ctx, cp.Config, "apiserver_request_duration_seconds_bucket", func(labels string) bool {
			for _, w := range want {
				if !strings.Contains(labels, w) {
					return false
				}
			}
			return true
		})
	}
	var r serverPatches
	all, err := bucket("+Inf")
	if err != nil {
		return r, err
	}
	le50, err := bucket("0.05")
	if err != nil {
		return r, err
	}
	le100, err := bucket("0.1")
	if err != nil {
		return r, err
	}
	return serverPatches{all: all, over50: all - le50, over100: all - le100}, nil
}

func (s serverPatches) since(before serverPatches) serverPatches {
	return serverPatches{all: s.all - before.all, over50: s.over50 - before.over50, over100: s.over100 - before.over100}
}

func tailPhase(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table) error {
	variants := slices.Clone(tailVariants)
	var proc tailProc
	if f.tailProcess {
		variants = append(variants, tailProcessVariant)
		dir, err := os.MkdirTemp("", "sliceclass-bench-tail-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		proc.dir, proc.kubeconfig = dir, filepath.Join(dir, "kubeconfig")
		if err := controlplane.WriteKubeconfig(cp.Config, proc.kubeconfig); err != nil {
			return err
		}
		if proc.bin, err = buildManager(ctx, dir); err != nil {
			return err
		}
	}
	results := make([][]tailResult, len(variants))
	for round := range f.rounds {
		end := t.loads.start(fmt.Sprintf("tail round %d/%d", round+1, f.rounds))
		for k := range variants {
			i := (k + round) % len(variants)
			v := variants[i]
			ns := fmt.Sprintf("tail-r%d-v%d", round, i)
			say("tail round %d/%d: %s: backlog of %d, then %d slices at %g/s...", round+1, f.rounds, v.name, f.tailBacklog, f.tailN, f.rate)
			res, err := tailRun(ctx, cp, f, v, ns, proc)
			if err != nil {
				return fmt.Errorf("tail, %s: %w", v.name, err)
			}
			say("tail round %d/%d: %s: p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms; %d slower than %s",
				round+1, f.rounds, v.name, res.p50, res.p90, res.p99, res.max, res.slow, f.tailSlow)
			if v.process {
				say("tail round %d/%d: %s: in the process, over the window: %s", round+1, f.rounds, v.name, res.proc)
			}
			results[i] = append(results[i], res)
		}
		end()
	}
	addTailRows(t, f, variants, results)
	return nil
}

// addTailRows adds each variant's figures over the rounds to t.
func addTailRows(t *table, f flags, variants []tailVariant, results [][]tailResult) {
	pick := func(rs []tailResult, x func(tailResult) float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = x(r)
		}
		return out
	}
	stat := func(xs []float64) string { return strings.TrimSpace(fmt.Sprintf("%.0f %s", median(xs), spread(xs))) }
	for i, v := range variants {
		rs := results[i]
		if len(rs) == 0 {
			continue
		}
		t.add(fmt.Sprintf("after a backlog of %d: create→decision of %d slices at %g/s, p50 / p90 / p99 / max (ms; medians, range), %s", f.tailBacklog, f.tailN, f.rate, v.name),
			fmt.Sprintf("%s / %s / %s / %s", stat(pick(rs, func(r tailResult) float64 { return r.p50 })), stat(pick(rs, func(r tailResult) float64 { return r.p90 })),
				stat(pick(rs, func(r tailResult) float64 { return r.p99 })), stat(pick(rs, func(r tailResult) float64 { return r.max }))))
		// The split of the slow slices, pooled over the rounds' medians.
		var split []string
		slow := 0
		for s := range tailSplit {
			var xs []float64
			for _, r := range rs {
				if r.slow > 0 {
					xs = append(xs, r.slowSplit[s])
				}
			}
			split = append(split, fmt.Sprintf("%s %s", tailSplit[s], msOrDash(xs)))
		}
		for _, r := range rs {
			slow += r.slow
		}
		t.add(fmt.Sprintf("after a backlog: slices slower than %s over %d rounds, and their split (median per round, then medians; ms), %s", f.tailSlow, len(rs), v.name),
			fmt.Sprintf("%d; %s", slow, strings.Join(split, " / ")))
		worst := rs[0]
		for _, r := range rs[1:] {
			if r.worstTotal > worst.worstTotal {
				worst = r
			}
		}
		if worst.worst != nil {
			var parts []string
			for s, name := range tailSplit {
				parts = append(parts, fmt.Sprintf("%s %.0f", name, worst.worst[s]))
			}
			// The steps can overlap (the decision can reach the watch before
			// the PATCH's answer reaches its client): the stretches, each
			// at least 0, need not add up to the total.
			t.add(fmt.Sprintf("after a backlog: the slowest slice of the rounds (ms): total; its stretches; status PATCHes, %s", v.name),
				fmt.Sprintf("%.0f; %s; %d", worst.worstTotal, strings.Join(parts, " / "), worst.worstPatches))
		}
		t.add(fmt.Sprintf("after a backlog: status PATCHes in the window as the API server timed them: over 50 ms / over 100 ms / all (summed over the rounds), %s", v.name),
			fmt.Sprintf("%.0f / %.0f / %.0f", sum(pick(rs, func(r tailResult) float64 { return float64(r.server.over50) })),
				sum(pick(rs, func(r tailResult) float64 { return float64(r.server.over100) })), sum(pick(rs, func(r tailResult) float64 { return float64(r.server.all) }))))
		if v.process {
			t.add(fmt.Sprintf("after a backlog: in the manager's process, over the window (its metrics; summed over the rounds): %s", v.name),
				procSum(rs).String())
			continue
		}
		t.add(fmt.Sprintf("after a backlog: Go GC in the window, this process: cycles / pause total / longest pause (medians), %s", v.name),
			fmt.Sprintf("%.0f / %.1f ms / ≤ %.2f ms", median(pick(rs, func(r tailResult) float64 { return float64(r.gc.cycles) })),
				median(pick(rs, func(r tailResult) float64 { return r.gc.pauseTotal.Seconds() * 1000 })),
				median(pick(rs, func(r tailResult) float64 { return r.gc.longest.Seconds() * 1000 }))))
	}
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

func msOrDash(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", median(xs))
}

// tailRun runs one variant in namespace ns: the backlog, then the steady
// state, and returns its figures.
func tailRun(ctx context.Context, cp *controlplane.ControlPlane, f flags, v tailVariant, ns string, proc tailProc) (tailResult, error) {
	var res tailResult
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		return res, err
	}
	class := ns
	// The example manager's process serves sbsProcess's class, and takes
	// the namespace's name for it.
	sp := sbsProcess{name: v.name, mode: ns}
	if v.process {
		class = sp.class()
	}
	tt := newTailTimes(ns)
	// The bench's watch sees every decision of the namespace, the
	// backlog's too, from before the backlog exists.
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		return res, err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	w, err := wc.Watch(wctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns))
	if err != nil {
		return res, err
	}
	defer w.Stop()
	var mu sync.Mutex
	decided := 0
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			rs, ok := ev.Object.(*authv1beta1.ResourceSlice)
			if !ok || !conditions.IsDecided(rs) {
				continue
			}
			if tt.get(rs.Name)[stepDecided].IsZero() {
				tt.mark(rs.Name, stepDecided, time.Now(), true)
				mu.Lock()
				decided++
				mu.Unlock()
			}
		}
	}()
	waitDecided := func(n int, timeout time.Duration) error {
		return pollUntil(ctx, timeout, func() bool { mu.Lock(); defer mu.Unlock(); return decided >= n })
	}

	if err := createMany(ctx, cp.Client, ns, f.tailBacklog, func(int) string { return class }, false); err != nil {
		return res, err
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(tt.wrap)
	rctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var done <-chan error
	var metricsAddr string
	switch {
	case v.process:
		done, metricsAddr, err = startTailProcess(rctx, proc, sp, f.workers)
	case v.baseline:
		done, err = startTailBaseline(rctx, cfg, cp, ns, class, f.workers, tt)
	default:
		done, err = startTailOurs(rctx, cfg, cp, ns, class, f.workers, v.events, tt)
	}
	if err != nil {
		return res, err
	}
	defer func() {
		stopRun()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			say("tail, %s stopped with %v", v.name, err)
		}
	}()
	if err := waitDecided(f.tailBacklog, 10*time.Minute); err != nil {
		return res, fmt.Errorf("the backlog of %d: %w", f.tailBacklog, err)
	}

	// The steady state, at once after the backlog's last decision.
	server0, err := readServerPatches(ctx, cp)
	if err != nil {
		return res, err
	}
	gc0 := readGC()
	var proc0 procWindow
	if v.process {
		if proc0, err = readProcMetrics(metricsAddr); err != nil {
			return res, err
		}
	}
	if f.tailPoll > 0 {
		// The side by side's parent counts decisions with a list of the
		// namespace every sbsPoll: the same load, here, on demand.
		pctx, stopPoll := context.WithCancel(ctx)
		defer stopPoll()
		go func() {
			t := time.NewTicker(f.tailPoll)
			defer t.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-t.C:
				}
				var list authv1beta1.ResourceSliceList
				_ = cp.Client.List(pctx, &list, client.InNamespace(ns))
			}
		}()
	}
	interval := time.Duration(float64(time.Second) / f.rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	names := make([]string, 0, f.tailN)
	for i := range f.tailN {
		<-tick.C
		rs := realisticSlice(ns, fmt.Sprintf("t-%05d", i), class, false)
		if err := slicetest.CreateAsLiqo(ctx, cp.Client, rs); err != nil {
			return res, err
		}
		// The slice becomes decidable once Liqo authenticated it: now.
		tt.mark(rs.Name, stepCreated, time.Now(), true)
		names = append(names, rs.Name)
	}
	if err := waitDecided(f.tailBacklog+f.tailN, 2*time.Minute); err != nil {
		return res, fmt.Errorf("the steady state's %d slices: %w", f.tailN, err)
	}
	res.gc = readGC().since(gc0)
	server1, err := readServerPatches(ctx, cp)
	if err != nil {
		return res, err
	}
	res.server = server1.since(server0)
	if v.process {
		proc1, err := readProcMetrics(metricsAddr)
		if err != nil {
			return res, err
		}
		res.proc = proc1.since(proc0)
	}

	lat := make([]float64, 0, len(names))
	slowSplits := make([][]float64, len(tailSplit))
	for _, name := range names {
		a := tt.get(name)
		total := msSince(a[stepCreated], a[stepDecided])
		lat = append(lat, total)
		if total <= float64(f.tailSlow)/float64(time.Millisecond) {
			continue
		}
		res.slow++
		split := make([]float64, len(tailSplit))
		for s := range tailSplit {
			split[s] = msSince(a[s], a[s+1])
			slowSplits[s] = append(slowSplits[s], split[s])
		}
		if total > res.worstTotal {
			res.worstTotal, res.worst, res.worstPatches = total, split, tt.patchCount(name)
		}
	}
	slices.Sort(lat)
	res.p50, res.p90, res.p99, res.max = quantile(lat, 0.5), quantile(lat, 0.9), quantile(lat, 0.99), lat[len(lat)-1]
	res.slowSplit = make([]float64, len(tailSplit))
	for s := range tailSplit {
		res.slowSplit[s] = median(slowSplits[s])
	}
	// The namespace's slices go, so that the next variant's etcd is not
	// larger by them; the deletion runs on in the API server.
	if err := cp.Client.DeleteAllOf(ctx, &authv1beta1.ResourceSlice{}, client.InNamespace(ns)); err != nil {
		say("tail: deleting the slices of %s: %v", ns, err)
	}
	return res, nil
}

// msSince is b−a in ms, 0 when either is unknown or b is before a (a
// decision can reach a watch before the write that preceded it is
// answered, on 2 shared cores).
func msSince(a, b time.Time) float64 {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return 0
	}
	return float64(b.Sub(a)) / float64(time.Millisecond)
}

// startTailOurs starts a manager on cfg caching ns, serving class with
// workers workers and the bench's handler, which marks when it is called.
func startTailOurs(ctx context.Context, cfg *rest.Config, cp *controlplane.ControlPlane, ns, class string, workers int,
	events resourceslice.DecisionEvents, tt *tailTimes) (<-chan error, error) {
	mgr, err := manager.New(cfg, manager.Options{
		Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		return nil, err
	}
	accept := acceptAll()
	timed := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		tt.mark(rs.Name, stepHandled, time.Now(), true)
		return accept.Handle(ctx, rs)
	})
	if err := resourceslice.AddToManager(mgr, class, timed, resourceslice.WithMaxConcurrentReconciles(workers),
		resourceslice.WithDecisionEvents(events), resourceslice.WithMetricsRegisterer(prometheus.NewRegistry())); err != nil {
		return nil, err
	}
	// The informer the class reads, made before the start so that the
	// bench's handler sees the same events the class's does.
	inf, err := mgr.GetCache().GetInformer(ctx, &authv1beta1.ResourceSlice{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(seenHandler(tt)); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
}

// seenHandler marks the slices the informer delivers undecided.
func seenHandler(tt *tailTimes) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tt.observe(obj) },
		UpdateFunc: func(_, obj any) { tt.observe(obj) },
	}
}

// startTailBaseline starts the bare informer + status patch loop on cfg:
// an informer on ns's slices queues each undecided, authenticated slice of
// class; workers workers take a key, read the slice from the informer and
// make the one optimistic status patch of baseline.go (a conflict queues
// the key again).
func startTailBaseline(ctx context.Context, cfg *rest.Config, cp *controlplane.ControlPlane, ns, class string, workers int, tt *tailTimes) (<-chan error, error) {
	informers, err := cache.New(cfg, cache.Options{Scheme: cp.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	if err != nil {
		return nil, err
	}
	inf, err := informers.GetInformer(ctx, &authv1beta1.ResourceSlice{})
	if err != nil {
		return nil, err
	}
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[types.NamespacedName]{Name: "tail-baseline-" + ns})
	enqueue := func(obj any) {
		tt.observe(obj)
		if rs, ok := obj.(*authv1beta1.ResourceSlice); ok && string(rs.Spec.Class) == class && conditions.IsAuthenticated(rs) && !conditions.IsDecided(rs) {
			q.Add(types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name})
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue(obj) },
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	var wg sync.WaitGroup
	go func() {
		err := informers.Start(ctx)
		q.ShutDown()
		wg.Wait()
		done <- err
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				tt.mark(key.Name, stepHandled, time.Now(), true)
				if err := baselinePatch(ctx, c, informers, key); err != nil && ctx.Err() == nil {
					q.Add(key) // a conflict: the informer has or will have the newer version
				}
				q.Done(key)
			}
		}()
	}
	return done, nil
}

// baselinePatch makes the baseline's decision of the cached slice key, if
// it is still undecided: one optimistic-lock status merge patch.
func baselinePatch(ctx context.Context, c client.Client, r client.Reader, key types.NamespacedName) error {
	var cur authv1beta1.ResourceSlice
	if err := r.Get(ctx, key, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if conditions.IsDecided(&cur) {
		return nil
	}
	desired := cur.DeepCopy()
	desired.Status.Resources = desired.Spec.Resources.DeepCopy()
	conditions.Accept(desired, "Granted", "granted as requested")
	return c.Status().Patch(ctx, desired, client.MergeFromWithOptions(&cur, client.MergeFromWithOptimisticLock{}))
}

// gcWindow is what the Go GC did in a window of this process.
type gcWindow struct {
	cycles     uint64
	pauseTotal time.Duration
	// longest is the upper bound of the histogram bucket of the longest
	// pause.
	longest time.Duration
}

// gcSample is a reading of the GC's runtime/metrics.
type gcSample struct {
	cycles uint64
	pauses *metrics.Float64Histogram
}

const (
	gcCyclesMetric = "/gc/cycles/total:gc-cycles"
	gcPausesMetric = "/sched/pauses/total/gc:seconds"
)

func readGC() gcSample {
	s := []metrics.Sample{{Name: gcCyclesMetric}, {Name: gcPausesMetric}}
	metrics.Read(s)
	var out gcSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		out.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		out.pauses = s[1].Value.Float64Histogram()
	}
	return out
}

// since is the GC's work between before and s: cycles, and the pauses'
// total (each pause counted at its bucket's midpoint; the buckets are a few
// percent wide) and longest (its bucket's upper bound).
func (s gcSample) since(before gcSample) gcWindow {
	w := gcWindow{cycles: s.cycles - before.cycles}
	if s.pauses == nil || before.pauses == nil || len(s.pauses.Counts) != len(before.pauses.Counts) {
		return w
	}
	var total float64
	for i, n := range s.pauses.Counts {
		d := n - before.pauses.Counts[i]
		if d == 0 {
			continue
		}
		lo, hi := s.pauses.Buckets[i], s.pauses.Buckets[i+1]
		// An open bucket counts at its finite end.
		mid := lo + (hi-lo)/2
		switch {
		case math.IsInf(lo, -1):
			mid = max(hi, 0)
		case math.IsInf(hi, 1):
			mid = lo
		}
		total += float64(d) * mid
		end := hi
		if math.IsInf(hi, 1) {
			end = lo
		}
		w.longest = max(w.longest, time.Duration(end*float64(time.Second)))
	}
	w.pauseTotal = time.Duration(total * float64(time.Second))
	return w
}
