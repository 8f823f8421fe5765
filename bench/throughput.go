package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/metering"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// series holds, per round, one variant's decisions/s and this process's CPU
// per decision (µs).
type series struct{ rate, cpu []float64 }

func (s *series) record(rate float64, cpu time.Duration) {
	s.rate, s.cpu = append(s.rate, rate), append(s.cpu, micros(cpu))
}

// throughputPhase runs f.rounds rounds of a backlog decided by our
// controllers (events all, events none, events none with a budget) and by
// the plain-client baselines, and adds the ratios the targets are stated
// on, the medians behind them and the write counts to t.
// Within a round the variants run one after the other, each round starting
// one variant later than the one before, so that the growing etcd and the
// machine's drift hit every variant alike.
func throughputPhase(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table) error {
	concurrency := f.concurrency()
	// Our controllers run with the SDK's default (an event per decision)
	// first, then with decision events off. (DecisionEventsDenied is not
	// run: the bench's handler grants every slice, so it would be events
	// off again.) The last variant repeats events off with every class
	// drawing from one budget large enough for the whole backlog: the
	// admission's cost.
	variants := []struct {
		label  string
		mode   resourceslice.DecisionEvents
		budget bool
		// profile is the suffix of the variant's CPU profile's file name.
		profile string
	}{
		{"events all (default)", resourceslice.DecisionEventsAll, false, ".all"},
		{"events none", resourceslice.DecisionEventsNone, false, ""},
		{"events none, with a budget", resourceslice.DecisionEventsNone, true, ".budget"},
	}
	ours := make([]series, len(variants))
	var plain, informer, same, single series
	var took, synced, firstAt time.Duration
	var perDecision float64
	var idle int
	for round := range f.rounds {
		type step struct {
			say string
			run func() error
		}
		var steps []step
		for m, v := range variants {
			steps = append(steps, step{fmt.Sprintf("our controllers, %s", v.label), func() error {
				first := round == 0 && m == 0
				// Each variant's first-round run is profiled: events none
				// (the CPU target's variant) to -cpuprofile's file, the
				// others to it with their suffix.
				var profile string
				if round == 0 && f.cpuProfile != "" {
					profile = f.cpuProfile + v.profile
				}
				res, err := oursRun(ctx, cp, f, fmt.Sprintf("r%d-%d", round, m), v.mode, v.budget, first, profile, nil)
				if err != nil {
					return err
				}
				ours[m].record(res.rate, res.cpu)
				if first {
					took, synced, firstAt, perDecision, idle = res.took, res.synced, res.first, res.perDecision, res.idle
				}
				say("round %d/%d: ours, %s: %.0f/s (synced %s, first decision %s, all %s after start)", round+1, f.rounds, v.label, res.rate,
					res.synced.Round(time.Millisecond), res.first.Round(time.Millisecond), res.took.Round(time.Millisecond))
				return nil
			}})
		}
		for _, b := range []struct {
			name string
			s    *series
			v    variant
		}{
			{"plain", &plain, variant{}},
			{"informer", &informer, variant{informer: true}},
			{"same-work", &same, variant{informer: true, events: true}},
		} {
			steps = append(steps, step{fmt.Sprintf("plain client (%s), %d writers", b.name, concurrency), func() error {
				r, cpu, err := baseline(ctx, cp, f.n, fmt.Sprintf("%s-%d", b.name, round), concurrency, b.v)
				if err != nil {
					return err
				}
				b.s.record(r, cpu)
				say("round %d/%d: plain client (%s): %.0f/s", round+1, f.rounds, b.name, r)
				return nil
			}})
		}
		end := t.loads.start(fmt.Sprintf("round %d/%d", round+1, f.rounds))
		for i := range steps {
			s := steps[(i+round)%len(steps)]
			say("round %d/%d: backlog of %d slices, %s...", round+1, f.rounds, f.n, s.say)
			if err := s.run(); err != nil {
				return err
			}
		}
		end()
		if round == 0 {
			say("plain client, 1 writer (once, for context)...")
			r, cpu, err := baseline(ctx, cp, f.n, "single-writer", 1, variant{})
			if err != nil {
				return err
			}
			single.record(r, cpu)
		}
	}
	all, none, budgeted := ours[0], ours[1], ours[2]

	// The targets, each a ratio of medians of the rounds.
	ratioTarget(t, "decisions/s, ours events none / plain client, same concurrency", none.rate, plain.rate, atLeast(0.95))
	ratioTarget(t, "client CPU per decision, ours events none / plain client + informer", none.cpu, informer.cpu, atMost(1.2))
	ratioTarget(t, "decisions/s, ours events all / plain client + informer + events", all.rate, same.rate, atLeast(1.0))
	ratioTarget(t, "decisions/s, with a budget / without (ours, events none)", budgeted.rate, none.rate, atLeast(0.97))
	ratioTarget(t, "client CPU per decision, with a budget / without (ours, events none)", budgeted.cpu, none.cpu, atMost(1.05))
	t.target("status writes per decision", fmt.Sprintf("%.2f", perDecision), "1.00", perDecision == 1)
	t.target("status writes in 5 s idle", strconv.Itoa(idle), "0", idle == 0)

	// The figures behind them.
	t.add("throughput rounds (medians below, range of the rounds in brackets)", strconv.Itoa(f.rounds))
	t.add("backlog: time to decide N (round 1, events all, from manager start)", took.Round(time.Millisecond).String())
	t.add("  of which: the slices' cache synced; the first decision", synced.Round(time.Millisecond).String()+"; "+firstAt.Round(time.Millisecond).String())
	type labelled struct {
		label string
		s     series
	}
	var rates []labelled
	for m, v := range variants {
		rates = append(rates, labelled{fmt.Sprintf("ours, %s", v.label), ours[m]})
	}
	rates = append(rates,
		labelled{fmt.Sprintf("plain client (%d writers)", concurrency), plain},
		labelled{"plain client + informer", informer},
		labelled{"plain client + informer + events", same},
		labelled{"plain client (1 writer, round 1 only)", single},
	)
	for _, r := range rates {
		t.add("decisions/s, "+r.label, fmt.Sprintf("%.0f %s", median(r.s.rate), spread(r.s.rate)))
	}
	t.add("decisions/s, ours events all / plain client, same concurrency", ratioStr(all.rate, plain.rate))
	t.add("decisions/s, ours events none / plain client + informer", ratioStr(none.rate, informer.rate))
	for _, r := range rates {
		t.add("client CPU per decision (µs), "+r.label, fmt.Sprintf("%.0f %s", median(r.s.cpu), spread(r.s.cpu)))
	}
	t.add("client CPU, ours events all / plain client + informer + events", ratioStr(all.cpu, same.cpu))
	t.add("client CPU, ours events none / plain client", ratioStr(none.cpu, plain.cpu))
	return nil
}

// bound is a target on a ratio: at least or at most a value.
type bound struct {
	v     float64
	upper bool
}

func atLeast(v float64) bound { return bound{v: v} }
func atMost(v float64) bound  { return bound{v: v, upper: true} }

func (b bound) String() string {
	if b.upper {
		return fmt.Sprintf("≤ %.2f", b.v)
	}
	return fmt.Sprintf("≥ %.2f", b.v)
}

func (b bound) met(r float64) bool {
	if b.upper {
		return r <= b.v
	}
	return r >= b.v
}

// ratioTarget adds the target that median(a)/median(b) is within want,
// judged on the ratio as printed (two decimals), so that the row reads
// consistently.
func ratioTarget(t *table, metric string, a, b []float64, want bound) {
	r := math.Round(100*median(a)/median(b)) / 100
	t.target(metric, ratioStr(a, b), want.String(), want.met(r))
}

// ratioStr is median(a)/median(b), followed with several rounds by the
// range of the per-round ratios a[i]/b[i] (both measured in the same round).
func ratioStr(a, b []float64) string {
	s := fmt.Sprintf("%.2f", median(a)/median(b))
	if len(a) < 2 || len(a) != len(b) {
		return s
	}
	per := make([]float64, len(a))
	for i := range a {
		per[i] = a[i] / b[i]
	}
	sort.Float64s(per)
	return fmt.Sprintf("%s (rounds %.2f–%.2f)", s, per[0], per[len(per)-1])
}

type oursResult struct {
	rate, perDecision float64
	// took, synced and first are from the manager's start to all
	// decided, to the cache synced and to the first decision.
	took, synced, first time.Duration
	cpu                 time.Duration // this process's CPU per decision
	// cpuDeciding is this process's CPU per decision from the first
	// decision to the last, as the rate counts: without the start-up
	// between the synced cache and the first decision.
	cpuDeciding time.Duration
	// serverDeciding is the control plane's (the API server's and etcd's)
	// CPU per decision over the same stretch as cpuDeciding.
	serverDeciding time.Duration
	idle           int
	// consumerSeries is the number of sliceclass_consumer_granted series
	// the run's classes export once the backlog is decided: one per
	// consumer and limited resource with metering compiled in and a
	// budget, none otherwise.
	consumerSeries int
}

// oursRun creates a backlog of n slices over k classes named prefix-<i>
// (oursBacklog), then has a manager in this process decide it (oursDecide).
func oursRun(ctx context.Context, cp *controlplane.ControlPlane, f flags, prefix string, mode resourceslice.DecisionEvents, withBudget, idle bool, profile string,
	configure func(*manager.Options)) (oursResult, error) {
	if err := oursBacklog(ctx, cp, f, prefix); err != nil {
		return oursResult{}, err
	}
	return oursDecide(ctx, cp, f, prefix, mode, withBudget, idle, profile, configure)
}

// oursBacklog creates the undecided backlog of f.n slices, in namespace
// ours-<prefix>, over f.k classes named prefix-<i>.
func oursBacklog(ctx context.Context, cp *controlplane.ControlPlane, f flags, prefix string) error {
	ns := "ours-" + prefix
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	return createMany(ctx, cp.Client, ns, f.n, func(i int) string { return fmt.Sprintf("%s-%d", prefix, i%f.k) }, false)
}

// oursDecide starts a manager serving the backlog oursBacklog created for
// prefix, recording decision events per mode, and times the decisions. It
// counts the status writes per decision and, with idle, over a 5 s idle
// window after the backlog. configure, when set, changes the manager's
// options further.
func oursDecide(ctx context.Context, cp *controlplane.ControlPlane, f flags, prefix string, mode resourceslice.DecisionEvents, withBudget, idle bool, profile string,
	configure func(*manager.Options)) (oursResult, error) {
	var res oursResult
	ns := "ours-" + prefix
	before, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
	if err != nil {
		return res, err
	}
	tap := newDecisionTap()
	mgr, err := newManager(cp, func(o *manager.Options) {
		// Cache only this round's namespace, as the informer baseline does:
		// earlier rounds' slices are an artefact of the bench, not load a
		// provider would have.
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
		if f.noPriorityQueue {
			o.Controller.UsePriorityQueue = ptr.To(false)
		}
		if configure != nil {
			configure(o)
		}
	})
	if err != nil {
		return res, err
	}
	opts := []resourceslice.Option{resourceslice.WithMaxConcurrentReconciles(f.perClass()), resourceslice.WithMetricsRegisterer(tap), resourceslice.WithDecisionEvents(mode)}
	if withBudget {
		// Room for every slice of the backlog (4 CPU, 8Gi each): the
		// admission runs for every decision and never denies.
		b, err := budget.New(prefix, corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(int64(4*f.n), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(8*f.n)<<30, resource.BinarySI),
		})
		if err != nil {
			return res, err
		}
		opts = append(opts, resourceslice.WithBudget(b))
	}
	for c := range f.k {
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
	// The slices' informer is made before the manager starts, so that the
	// wait below is for it to list the backlog (on a cache with no
	// informer yet the wait would return at once).
	if _, err := mgr.GetCache().GetInformer(ctx, &authv1beta1.ResourceSlice{}); err != nil {
		return res, err
	}
	t0 := time.Now()
	say("TRACE %s start", t0.Format("15:04:05.000"))
	go func() { done <- mgr.Start(mctx) }()
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		return res, errors.New("manager cache did not sync")
	}
	res.synced = time.Since(t0)
	say("TRACE %s synced", time.Now().Format("15:04:05.000"))
	// The profile covers what the CPU per decision counts: from the synced
	// cache on.
	if profile != "" {
		pf, err := os.Create(profile)
		if err != nil {
			return res, err
		}
		defer func() { _ = pf.Close() }()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile() // on an early return; a second stop does nothing
	}
	cpu0 := cpuTime()
	first, last, cpuAtFirst, err := waitCounter(tap, f.n, 10*time.Minute)
	if err != nil {
		return res, err
	}
	res.took, res.first = last.Sub(t0), first.Sub(t0)
	if profile != "" {
		pprof.StopCPUProfile()
	}
	// The rate is from the first decision to the last, as the baseline's is
	// from its first write to its last: both leave out reading the backlog
	// and starting (for ours, every informer the SDK reads syncing; a type
	// nothing has watched yet can take a second to list, see BENCHMARKS.md),
	// reported apart.
	// Two decisions seen in one poll are at most one poll apart.
	res.rate = float64(f.n-1) / max(last.Sub(first), tapPoll).Seconds()
	if f.diag {
		diagnose(prefix)
	}
	time.Sleep(time.Second)
	end := sampleCPU()
	res.cpu = (end.self - cpu0) / time.Duration(f.n)
	res.cpuDeciding = (end.self - cpuAtFirst.self) / time.Duration(f.n-1)
	res.serverDeciding = (end.server - cpuAtFirst.server) / time.Duration(f.n-1)
	after, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
	if err != nil {
		return res, err
	}
	res.perDecision = float64(after-before) / float64(f.n)
	// Read after the CPU was sampled, so that the gathering is not counted.
	if withBudget {
		if res.consumerSeries, err = seriesOf(tap.Registry, metering.MetricGranted); err != nil {
			return res, err
		}
	}
	if !idle {
		return res, nil
	}
	time.Sleep(5 * time.Second)
	later, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
	if err != nil {
		return res, err
	}
	res.idle = later - after
	return res, nil
}

// cpuSample is the CPU used so far by this process and by the control
// plane's processes.
type cpuSample struct{ self, server time.Duration }

func sampleCPU() cpuSample { return cpuSample{self: cpuTime(), server: controlPlaneCPU()} }

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

// decisionTap is the metrics registerer of a run of ours: it registers
// everything with the registry and keeps the collector of
// sliceclass_decisions_total, so that the bench reads that one counter
// every few milliseconds without gathering every metric (whose CPU would
// count as the controller's).
type decisionTap struct {
	*prometheus.Registry
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func newDecisionTap() *decisionTap { return &decisionTap{Registry: prometheus.NewRegistry()} }

// Register implements prometheus.Registerer.
func (d *decisionTap) Register(c prometheus.Collector) error {
	if err := d.Registry.Register(c); err != nil {
		return err
	}
	descs := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(descs); close(descs) }()
	for desc := range descs {
		if strings.Contains(desc.String(), `"sliceclass_decisions_total"`) {
			d.mu.Lock()
			d.collectors = append(d.collectors, c)
			d.mu.Unlock()
		}
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (d *decisionTap) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

// decisions sums the decisions counter.
func (d *decisionTap) decisions() int {
	d.mu.Lock()
	cs := append([]prometheus.Collector(nil), d.collectors...)
	d.mu.Unlock()
	total := 0.0
	for _, c := range cs {
		ms := make(chan prometheus.Metric, 64)
		go func() { c.Collect(ms); close(ms) }()
		for m := range ms {
			var pb dto.Metric
			if m.Write(&pb) == nil {
				total += counterValue(&pb)
			}
		}
	}
	return int(total)
}

// tapPoll is how often waitCounter reads the decisions counter.
const tapPoll = 2 * time.Millisecond

// waitCounter waits until the decisions counter reaches n, and returns
// when it first saw a decision and when it saw the n-th.
func waitCounter(tap *decisionTap, n int, timeout time.Duration) (first, last time.Time, cpuAtFirst cpuSample, err error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		d := tap.decisions()
		if d > 0 && first.IsZero() {
			first, cpuAtFirst = time.Now(), sampleCPU()
		}
		if d >= n {
			return first, time.Now(), cpuAtFirst, nil
		}
		time.Sleep(tapPoll)
	}
	return first, time.Time{}, cpuAtFirst, fmt.Errorf("only %d of %d slices decided after %s", tap.decisions(), n, timeout)
}

// decisions sums the decisions counter of every class in reg.
func decisions(reg *prometheus.Registry) int {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "sliceclass_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += counterValue(m)
		}
	}
	return int(total)
}

// seriesOf counts the series of the metric name in reg.
func seriesOf(reg *prometheus.Registry, name string) (int, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, fmt.Errorf("gathering the classes' metrics: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric()), nil
		}
	}
	return 0, nil
}

func counterValue(m *dto.Metric) float64 {
	if m.GetCounter() == nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

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
