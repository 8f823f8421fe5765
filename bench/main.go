// Command bench measures a sliceclass class controller on a real control
// plane (kube-apiserver + etcd from envtest) and prints one table.
//
//	make bench                       # defaults: -n 2000 -k 4 -workers 4
//	go run ./bench -n 500 -markdown out.md
//
// Every throughput figure is a ratio against a baseline measured in the same
// run: W goroutines each making the same decision with one optimistic status
// patch through a plain client, the API server's limit for this work here.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

type flags struct {
	n, k, workers, latencyN int
	rate                    float64
	memN                    string
	markdown                string
	rounds                  int
	diag                    bool
	noPriorityQueue         bool
	cpuProfile              string
	// child mode: measure the memory of a manager caching the "mem"
	// namespace's first N slices, then exit.
	memChild int
	trim     bool
	cfgFile  string
}

func main() {
	var f flags
	flag.IntVar(&f.n, "n", 2000, "slices in the backlog and the baseline")
	flag.IntVar(&f.k, "k", 4, "served classes")
	flag.IntVar(&f.workers, "workers", 4, "total concurrency, for our controllers (split over the classes) and the baseline")
	flag.Float64Var(&f.rate, "rate", 50, "steady-state slice creations per second")
	flag.IntVar(&f.latencyN, "latency-n", 300, "slices created in the steady-state phase")
	flag.StringVar(&f.memN, "mem-n", "2000,10000", "cached slice counts for the memory phase")
	flag.StringVar(&f.markdown, "markdown", "", "also write the table as markdown to this file")
	flag.IntVar(&f.rounds, "rounds", 3, "throughput rounds; medians are reported")
	flag.BoolVar(&f.noPriorityQueue, "no-priority-queue", false, "run our controllers on client-go's plain workqueue instead of controller-runtime's priority queue")
	flag.BoolVar(&f.diag, "diag", false, "print controller-runtime's reconcile and queue timings for each run of ours")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the controller during the first backlog phase")
	flag.IntVar(&f.memChild, "mem-child", -1, "internal: run as the memory-measuring child")
	flag.BoolVar(&f.trim, "trim", false, "internal: child uses the trimming cache transform")
	flag.StringVar(&f.cfgFile, "config", "", "internal: child's API server config")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())

	var err error
	if f.memChild >= 0 {
		err = memChild(f)
	} else {
		err = run(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }

type row struct{ metric, value, target, ok string }

func run(f flags) error {
	if f.n < 1 || f.k < 1 || f.workers < f.k || f.rounds < 1 {
		return fmt.Errorf("need n ≥ 1, k ≥ 1, workers ≥ k and rounds ≥ 1 (got n=%d k=%d workers=%d rounds=%d)", f.n, f.k, f.workers, f.rounds)
	}
	start := time.Now()
	say("starting the control plane...")
	cp, err := controlplane.New()
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop() }()
	ctx := context.Background()
	var rows []row
	add := func(metric, value, target, ok string) { rows = append(rows, row{metric, value, target, ok}) }

	perClass := f.workers / f.k
	concurrency := perClass * f.k
	add("machine", fmt.Sprintf("%d cores shared by API server, etcd, controller", numCPU()), "", "")
	add("slices (N) / classes (K) / concurrency", fmt.Sprintf("%d / %d / %d (%d per class)", f.n, f.k, concurrency, perClass), "", "")

	// a) and b): throughput rounds, ours and the baselines interleaved so that
	// the growing etcd and the machine's drift hit every variant alike.
	// Each series holds, per round, decisions/s and this process's CPU per
	// decision (µs).
	type series struct{ rate, cpu []float64 }
	var ours, quiet, plain, informer, same, single series
	record := func(s *series, rate float64, cpu time.Duration) {
		s.rate, s.cpu = append(s.rate, rate), append(s.cpu, micros(cpu))
	}
	var took, synced time.Duration
	var perDecision float64
	var idle int
	for round := range f.rounds {
		say("round %d/%d: backlog of %d slices over %d classes, our controllers...", round+1, f.rounds, f.n, f.k)
		res, err := oursRun(ctx, cp, f, perClass, fmt.Sprintf("r%d", round), true, round == 0 && f.cpuProfile != "")
		if err != nil {
			return err
		}
		record(&ours, res.rate, res.cpu)
		if round == 0 {
			took, synced, perDecision, idle = res.took, res.synced, res.perDecision, res.idle
		}
		say("round %d/%d: ours %.0f/s; the same with events discarded...", round+1, f.rounds, res.rate)
		q, err := oursRun(ctx, cp, f, perClass, fmt.Sprintf("q%d", round), false, false)
		if err != nil {
			return err
		}
		record(&quiet, q.rate, q.cpu)
		for _, b := range []struct {
			name string
			s    *series
			v    variant
		}{
			{"plain", &plain, variant{}},
			{"informer", &informer, variant{informer: true}},
			{"same-work", &same, variant{informer: true, events: true}},
		} {
			say("round %d/%d: plain client (%s), %d writers...", round+1, f.rounds, b.name, concurrency)
			r, cpu, err := baseline(ctx, cp, f.n, fmt.Sprintf("%s-%d", b.name, round), concurrency, b.v)
			if err != nil {
				return err
			}
			record(b.s, r, cpu)
		}
		if round == 0 {
			say("plain client, 1 writer (once, for context)...")
			r, cpu, err := baseline(ctx, cp, f.n, "single-writer", 1, variant{})
			if err != nil {
				return err
			}
			record(&single, r, cpu)
		}
	}
	ratio := median(ours.rate) / median(plain.rate)
	add("throughput rounds (medians below)", strconv.Itoa(f.rounds), "", "")
	add("backlog: time to decide N (round 1, from manager start)", took.Round(time.Millisecond).String(), "", "")
	add("  of which cache start and sync", synced.Round(time.Millisecond).String(), "", "")
	rates := []struct {
		label string
		s     series
	}{
		{fmt.Sprintf("ours (%d workers, from cache sync)", concurrency), ours},
		{"ours, events discarded", quiet},
		{fmt.Sprintf("plain client (%d writers)", concurrency), plain},
		{"plain client + informer", informer},
		{"plain client + informer + events", same},
		{"plain client (1 writer)", single},
	}
	for _, r := range rates {
		add("decisions/s, "+r.label, fmt.Sprintf("%.0f %s", median(r.s.rate), spread(r.s.rate)), "", "")
	}
	add("ours / plain client, same concurrency", fmt.Sprintf("%.2f", ratio), "≥ 0.90", okStr(ratio >= 0.9))
	add("ours / plain client + informer + events", fmt.Sprintf("%.2f", median(ours.rate)/median(same.rate)), "", "")
	add("ours, events discarded / plain client + informer", fmt.Sprintf("%.2f", median(quiet.rate)/median(informer.rate)), "", "")
	for _, r := range rates {
		add("client CPU per decision (µs), "+r.label, fmt.Sprintf("%.0f %s", median(r.s.cpu), spread(r.s.cpu)), "", "")
	}
	add("client CPU, ours / plain client + informer + events", fmt.Sprintf("%.2f", median(ours.cpu)/median(same.cpu)), "", "")
	add("status writes per decision", fmt.Sprintf("%.2f", perDecision), "1.00", okStr(perDecision == 1))
	add("status writes in 5 s idle", strconv.Itoa(idle), "0", okStr(idle == 0))

	// The steady-state phase needs a running manager serving class-0.
	reg := prometheus.NewRegistry()
	mgr, err := newManager(cp, nil)
	if err != nil {
		return err
	}
	if err := resourceslice.AddToManager(mgr, "class-0", acceptAll(), resourceslice.WithMaxConcurrentReconciles(perClass), resourceslice.WithMetricsRegisterer(reg)); err != nil {
		return err
	}
	mctx, stopMgr := context.WithCancel(ctx)
	defer stopMgr()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mctx) }()
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		return errors.New("manager cache did not sync")
	}

	// c) steady-state latency.
	say("steady state: %d slices at %.0f/s...", f.latencyN, f.rate)
	p50, p99, err := latency(ctx, cp, f)
	if err != nil {
		return err
	}
	add(fmt.Sprintf("create→decision p50 (%.0f slices/s)", f.rate), p50.Round(time.Millisecond).String(), "", "")
	add(fmt.Sprintf("create→decision p99 (%.0f slices/s)", f.rate), p99.Round(time.Millisecond).String(), "", "")
	stopMgr()
	if err := <-mgrDone; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}

	// e) memory, each configuration in a fresh child process.
	counts, err := parseCounts(f.memN)
	if err != nil {
		return err
	}
	largest := 0
	for _, c := range counts {
		largest = maxInt(largest, c)
	}
	say("memory: creating %d realistic slices...", largest)
	if err := cp.CreateNamespace(ctx, "mem"); err != nil {
		return err
	}
	if err := createMany(ctx, cp.Client, "mem", largest, func(int) string { return "mem" }, true); err != nil {
		return err
	}
	cfgFile, err := writeConfig(cp.Config)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(cfgFile) }()
	empty := map[bool]memResult{}
	for _, trim := range []bool{false, true} {
		if empty[trim], err = child(cfgFile, 0, trim); err != nil {
			return err
		}
	}
	perSlice := map[int]map[bool]float64{}
	for _, c := range counts {
		perSlice[c] = map[bool]float64{}
		for _, trim := range []bool{false, true} {
			say("memory: %d cached slices, trim=%v...", c, trim)
			m, err := child(cfgFile, c, trim)
			if err != nil {
				return err
			}
			per := (float64(m.HeapInuse) - float64(empty[trim].HeapInuse)) / float64(m.Slices)
			perSlice[c][trim] = per
			label := "untrimmed"
			if trim {
				label = "trimmed"
			}
			add(fmt.Sprintf("heap / RSS, %d slices cached, %s", c, label), fmt.Sprintf("%s / %s", mib(m.HeapInuse), mib(m.RSS)), "", "")
			add(fmt.Sprintf("bytes per cached slice, %d, %s", c, label), fmt.Sprintf("%.0f", per), "", "")
		}
		cut := 1 - perSlice[c][true]/perSlice[c][false]
		target, ok := "", ""
		if c == largest {
			target, ok = "≥ 30%", okStr(cut >= 0.3)
		}
		add(fmt.Sprintf("trimming cuts bytes/slice at %d by", c), fmt.Sprintf("%.0f%%", cut*100), target, ok)
	}
	add("bench wall time", time.Since(start).Round(time.Second).String(), "< 10m", okStr(time.Since(start) < 10*time.Minute))

	printTable(os.Stdout, rows)
	if f.markdown != "" {
		return writeMarkdown(f.markdown, rows)
	}
	return nil
}

type oursResult struct {
	rate, perDecision float64
	took, synced      time.Duration
	cpu               time.Duration // this process's CPU per decision
	idle              int
}

// oursRun creates a backlog of n slices over k classes named prefix-<i>,
// then starts a manager serving them and times the decisions. With measure
// it also counts the status writes per decision and over an idle window.
func oursRun(ctx context.Context, cp *controlplane.ControlPlane, f flags, perClass int, prefix string, events, profile bool) (oursResult, error) {
	var res oursResult
	ns := "ours-" + prefix
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		return res, err
	}
	if err := createMany(ctx, cp.Client, ns, f.n, func(i int) string { return fmt.Sprintf("%s-%d", prefix, i%f.k) }, false); err != nil {
		return res, err
	}
	before, err := cp.RequestCount(ctx, "PATCH", "resourceslices", "status")
	if err != nil {
		return res, err
	}
	reg := prometheus.NewRegistry()
	mgr, err := newManager(cp, func(o *manager.Options) {
		// Cache only this round's namespace, as the informer baseline does:
		// earlier rounds' slices are an artefact of the bench, not load a
		// provider would have.
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
		if f.noPriorityQueue {
			o.Controller.UsePriorityQueue = ptr.To(false)
		}
	})
	if err != nil {
		return res, err
	}
	for c := range f.k {
		opts := []resourceslice.Option{resourceslice.WithMaxConcurrentReconciles(perClass), resourceslice.WithMetricsRegisterer(reg)}
		if !events {
			opts = append(opts, resourceslice.WithEventRecorder(discardEvents{}))
		}
		if err := resourceslice.AddToManager(mgr, fmt.Sprintf("%s-%d", prefix, c), acceptAll(), opts...); err != nil {
			return res, err
		}
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			say("manager %s stopped with %v", prefix, err)
		}
	}()
	if profile {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return res, err
		}
		defer func() { _ = pf.Close() }()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return res, err
		}
	}
	t0 := time.Now()
	go func() { done <- mgr.Start(mctx) }()
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		return res, errors.New("manager cache did not sync")
	}
	res.synced = time.Since(t0)
	cpu0 := cpuTime()
	if err := waitCounter(reg, f.n, 10*time.Minute); err != nil {
		return res, err
	}
	res.took = time.Since(t0)
	if profile {
		pprof.StopCPUProfile()
	}
	// The rate counts from the synced cache, as the baseline counts from its
	// listed slices: both leave out reading the backlog, reported apart.
	res.rate = float64(f.n) / (res.took - res.synced).Seconds()
	if f.diag {
		diagnose(prefix)
	}
	time.Sleep(time.Second)
	res.cpu = (cpuTime() - cpu0) / time.Duration(f.n)
	after, err := cp.RequestCount(ctx, "PATCH", "resourceslices", "status")
	if err != nil {
		return res, err
	}
	res.perDecision = float64(after-before) / float64(f.n)
	if !events {
		return res, nil
	}
	time.Sleep(5 * time.Second)
	idle, err := cp.RequestCount(ctx, "PATCH", "resourceslices", "status")
	if err != nil {
		return res, err
	}
	res.idle = idle - after
	return res, nil
}

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
	t, cpu0 := time.Now(), cpuTime()
	if err := parallel(w, len(list.Items), func(i int) error {
		cur := &list.Items[i]
		desired := cur.DeepCopy()
		desired.Status.Resources = desired.Spec.Resources.DeepCopy()
		conditions.Accept(desired, "Granted", "granted as requested")
		if err := cp.Client.Status().Patch(ctx, desired, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		rec.Eventf(desired, nil, corev1.EventTypeNormal, "Granted", "Decide", "granted as requested")
		return nil
	}); err != nil {
		return 0, 0, err
	}
	took := time.Since(t)
	if v.informer || v.events {
		// Let the informer and the broadcaster finish the work they are owed.
		time.Sleep(500 * time.Millisecond)
	}
	return float64(len(list.Items)) / took.Seconds(), (cpuTime() - cpu0) / time.Duration(len(list.Items)), nil
}

// cpuTime is the user and system CPU this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func spread(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return fmt.Sprintf("(%.0f–%.0f)", s[0], s[len(s)-1])
}

// discardEvents drops events, to measure what recording them costs.
type discardEvents struct{}

func (discardEvents) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}

func acceptAll() handler.Handler {
	return handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "granted as requested")
		return ctrl.Result{}, nil
	})
}

func newManager(cp *controlplane.ControlPlane, configure func(*manager.Options)) (manager.Manager, error) {
	opts := manager.Options{Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	if configure != nil {
		configure(&opts)
	}
	return manager.New(cp.Config, opts)
}

// realisticSlice is an authenticated, replicated slice with a ~1 KiB CSR, as
// Liqo leaves it.
func realisticSlice(ns, name, class string, decided bool) *authv1beta1.ResourceSlice {
	rs := slicetest.NewSlice(name, slicetest.WithNamespace(ns), slicetest.WithClass(class),
		slicetest.WithRequest(corev1.ResourceCPU, "4"), slicetest.WithRequest(corev1.ResourceMemory, "8Gi"), slicetest.WithRequest(corev1.ResourcePods, "110"))
	csr := make([]byte, 1024)
	_, _ = rand.Read(csr)
	rs.Spec.CSR = csr
	crt := make([]byte, 1200)
	_, _ = rand.Read(crt)
	rs.Status.AuthParams.SignedCRT = crt
	rs.Status.AuthParams.CA = crt[:800]
	if decided {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "granted as requested")
	}
	return rs
}

// createMany creates n slices (create, then a status PUT as Liqo would) with
// 8 parallel writers.
func createMany(ctx context.Context, c client.Client, ns string, n int, class func(int) string, decided bool) error {
	return parallel(8, n, func(i int) error {
		rs := realisticSlice(ns, fmt.Sprintf("s-%05d", i), class(i), decided)
		rs.Labels[bucketLabel] = strconv.Itoa(i / bucketSize)
		status := rs.Status
		if err := c.Create(ctx, rs); err != nil {
			return err
		}
		rs.Status = status
		return c.Status().Update(ctx, rs)
	})
}

// parallel runs f(0..n-1) on w goroutines and returns the first error.
func parallel(w, n int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// waitCounter waits until the decisions counter in reg reaches n.
func waitCounter(reg *prometheus.Registry, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if decisions(reg) >= n {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("only %d of %d slices decided after %s", decisions(reg), n, timeout)
}

func decisions(reg *prometheus.Registry) int {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != resourceslice.MetricDecisions {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += counterValue(m)
		}
	}
	return int(total)
}

func counterValue(m *dto.Metric) float64 {
	if m.GetCounter() == nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// latency creates slices at f.rate while the manager runs (they land in
// class-0) and measures create→decision from a watch.
func latency(ctx context.Context, cp *controlplane.ControlPlane, f flags) (p50, p99 time.Duration, err error) {
	const ns = "bench-latency"
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
		status := rs.Status
		if err := cp.Client.Create(ctx, rs); err != nil {
			return 0, 0, err
		}
		rs.Status = status
		if err := cp.Client.Status().Update(ctx, rs); err != nil {
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

type memResult struct {
	HeapInuse uint64 `json:"heapInuse"`
	RSS       uint64 `json:"rss"`
	Slices    int    `json:"slices"`
}

type savedConfig struct {
	Host                      string
	CAData, CertData, KeyData []byte
}

func writeConfig(cfg *rest.Config) (string, error) {
	f, err := os.CreateTemp("", "sliceclass-bench-*.json")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	return f.Name(), json.NewEncoder(f).Encode(savedConfig{Host: cfg.Host, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData})
}

// child re-runs this binary to measure one memory configuration in a fresh
// process.
func child(cfgFile string, n int, trim bool) (memResult, error) {
	self, err := os.Executable()
	if err != nil {
		return memResult{}, err
	}
	cmd := exec.Command(self, "-mem-child", strconv.Itoa(n), "-trim="+strconv.FormatBool(trim), "-config", cfgFile)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return memResult{}, fmt.Errorf("memory child (n=%d trim=%v): %w", n, trim, err)
	}
	var m memResult
	if err := json.Unmarshal(out, &m); err != nil {
		return memResult{}, fmt.Errorf("memory child output %q: %w", out, err)
	}
	return m, nil
}

func printTable(out io.Writer, rows []row) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "METRIC\tVALUE\tTARGET\tOK")
	for _, r := range rows {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.metric, r.value, r.target, r.ok)
	}
	_ = tw.Flush()
}

func writeMarkdown(path string, rows []row) error {
	var b strings.Builder
	b.WriteString("| metric | value | target | ok |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.metric, r.value, r.target, r.ok)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func okStr(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-mem-n: %q is not a positive count", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func numCPU() int { return goruntime.NumCPU() }

// diagnose prints controller-runtime's own reconcile and REST client
// figures for the controllers of prefix (flag -diag).
func diagnose(prefix string) {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "controller_runtime_reconcile_time_seconds", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds":
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if (l.GetName() == "controller" || l.GetName() == "name") && strings.HasPrefix(l.GetValue(), "resourceslice-"+prefix) {
						h := m.GetHistogram()
						say("diag %s %s: n=%d mean=%.2fms", mf.GetName(), l.GetValue(), h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
					}
				}
			}
		case "rest_client_request_duration_seconds":
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				if strings.Contains(strings.Join(labels, ","), "PATCH") || strings.Contains(strings.Join(labels, ","), "POST") {
					say("diag rest %v: n=%d mean=%.2fms", labels, h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
				}
			}
		}
	}
}
