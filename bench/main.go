// Command bench measures a sliceclass class controller on a real control
// plane (kube-apiserver + etcd from envtest) and prints a table in two parts: the
// targets first, each with its measured value, target and verdict, then the
// figures behind them.
//
//	make bench                       # the defaults below
//	go run ./bench -n 500 -markdown out.md
//
// Every throughput figure is a ratio against a baseline measured in the same
// run: W goroutines each making the same decision with one optimistic status
// patch through a plain client, the API server's limit for this work here.
//
// The defaults (-n 1000 -rounds 3 -rate 20 -latency-n 600 -mem-n 2000,10000
// -sbs-n 2000 -settle 1m) took 5m45s on a quiet 2-core machine on
// 2026-11-24 (throughput 2m29s, steady state 45s, memory 58s, side by side
// 1m31s; the table's wall-time rows say what each run took), leaving room
// for the settle waits within 10 minutes (5 rounds of 2,000 slices took 40
// before this turn's changes; -n 2000 now takes about 8):
//   - 3 throughput rounds, the fewest whose median drops an outlier round,
//     of 6 backlogs each (our controllers with events all, events none, and
//     events none with a budget; the three baselines) and one single-writer
//     baseline: 19 backlogs of 1,000 slices, about 9 s each to create and
//     decide, so about 3 minutes. 1,000 slices take seconds to decide, long
//     beside a manager's start (reported apart) and the last workers' tail;
//   - the steady state at 20 slices/s, the rate its target is stated at, for
//     30 s: 600 slices, so the p99 is the 7th slowest, not the slowest;
//   - memory at 2,000 and 10,000 cached slices, the count its target is
//     stated at: about a minute;
//   - the side by side at 2,000 slices, the count its target is stated at:
//     the example manager, a template-shaped controller and a plain client,
//     each its own process deciding its own backlog alone (empty first, for
//     the bytes per cached slice), on a control plane of its own: about 2
//     minutes, most of it the three backlogs' creation and decisions;
//   - each round and the steady state first wait, up to -settle, for the
//     1-minute load left by the stretch before them to fall to the number
//     of cores: about 30 s each on a quiet machine, once the bench's own
//     rounds have raised it, and no more waiting once a stretch has started
//     busy (the run then has no verdict).
//
// The bench reads the machine's 1-minute load average (/proc/loadavg) and
// core count at the start and end of each throughput round and of the
// steady state. It judges the figures only from medians of at least 3
// rounds, each started with the load at most the number of cores; otherwise
// it prints the figures marked noisy, without targets or verdict, and a line
// saying why ("load 2.31 > 2 cores at the start of round 2/3: rerun later").
// Where there is no load average to read, it says "unknown" and judges all
// the same.
//
// Exit status: 0 when the table has a verdict (whether or not every target is
// met), 1 when the bench failed, 2 for bad flags, 3 (exitNoVerdict) when it
// printed the figures without a verdict. go run reports any non-zero status
// as 1 (after printing "exit status 3"); make bench runs the built binary,
// whose status is the bench's own.
//
// The phases live one to a file: throughput.go (backlog rounds of our
// controllers), baseline.go (the plain-client baselines they are set
// against), latency.go (steady state), memory.go (cache size, in child
// processes), sidebyside.go (the example manager's memory against a
// template-shaped controller's and a plain client's, each in a process of
// its own, sbschild.go); fixtures.go creates slices as Liqo leaves them; load.go
// watches the machine's load and decides whether the run can be judged;
// scale.go (opt-in, -scale-n) times one replica holding many slices and
// standbys taking over from it, each in a child process (scalechild.go,
// scaleproc.go); view.go (alone, -view-only) measures the status.class
// view's heap per slice beside the typed slice cache's, in memory's child
// processes; reclaim.go (alone, -reclaim-only) times reclaims, the
// ShadowPod watch's cost, and its heap per pod with 1 and 10 budgets in
// one set; tail.go (alone, -tail-only) measures the steady-state latency
// after a backlog, ours beside a bare informer + patch loop, and splits
// each slow slice's time into its steps; metering.go (alone,
// -metering-only, make bench-metering) compares decisions/s and CPU per
// decision with metering compiled in and out, two builds of this bench
// deciding alternately, each in a process of its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

type flags struct {
	n, k, workers, latencyN int
	rate                    float64
	memN                    string
	markdown                string
	rounds                  int
	settle                  time.Duration
	diag                    bool
	noPriorityQueue         bool
	cpuProfile              string
	// child mode: measure the memory of a manager caching the "mem"
	// namespace's first N slices, then exit.
	memChild int
	trim     bool
	cfgFile  string
	// memEvaluated: the child waits for a handler call per slice.
	memEvaluated bool
	// the status.class view's phase (view.go), run alone with viewOnly.
	viewN    string
	viewOnly bool
	// the scale phase (scale.go), off unless scaleN names a size.
	scaleN     string
	scaleFresh int
	scaleCold  bool
	scaleOnly  bool
	// child mode: run one replica of the scale phase (a scaleChildSpec in
	// JSON), then exit.
	scaleChild string
	// the side by side (sidebyside.go), off when sbsN is 0.
	sbsN    int
	sbsOnly bool
	// child mode: run one process of the side by side (sbsTemplate or
	// sbsPlain) serving sbsClass, until SIGTERM.
	sbsChild, sbsClass string
	// splitCores: the control plane on core 0, the rest on the others
	// (cores.go).
	splitCores bool
	// the reclaim phase (reclaim.go), run alone with reclaimOnly.
	reclaimOnly               bool
	reclaimN, podsN, podsMemN int
	// podsMemOnly: of the reclaim phase, only the heap per ShadowPod.
	podsMemOnly bool
	// child mode: measure a manager whose budgets (podsBudgets of them)
	// count the podsChild ShadowPods of namespace podsNS, then exit.
	podsChild, podsBudgets int
	podsNS                 string
	// podsHeapProfile: the memory children write a heap profile to it,
	// with the pod and budget counts appended.
	podsHeapProfile string
	// the tail phase (tail.go), run alone with tailOnly.
	tailOnly           bool
	tailBacklog, tailN int
	tailSlow           time.Duration
	// tailProcess adds the example manager, a process of its own with
	// leader election, to the tail phase's variants.
	tailProcess bool
	// tailPoll: list the variant's namespace this often through the
	// steady state, as the side by side's parent polls (0: never).
	tailPoll time.Duration
	// the metering phase (metering.go), run alone with meteringOnly.
	meteringOnly bool
	// child mode: decide the backlog of this prefix (oursBacklog's) and
	// print what it measured, then exit.
	meteringChild string
}

// perClass is each class's share of the workers; concurrency is the total
// that share adds up to, which the baselines use as is.
func (f flags) perClass() int    { return f.workers / f.k }
func (f flags) concurrency() int { return f.perClass() * f.k }

// exitNoVerdict is the exit status of a run that printed its figures
// without a verdict (noVerdict says why).
const exitNoVerdict = 3

func main() {
	var f flags
	flag.IntVar(&f.n, "n", 1000, "slices in each backlog and baseline")
	flag.IntVar(&f.k, "k", 4, "served classes")
	flag.IntVar(&f.workers, "workers", 4, "total concurrency, for our controllers (split over the classes) and the baseline")
	flag.Float64Var(&f.rate, "rate", latencyTargetRate, "steady-state slice creations per second (the p99 target is stated at 20)")
	flag.IntVar(&f.latencyN, "latency-n", 600, "slices created in the steady-state phase")
	flag.StringVar(&f.memN, "mem-n", "2000,10000", "cached slice counts for the memory phase")
	flag.StringVar(&f.markdown, "markdown", "", "also write the table as markdown to this file")
	flag.IntVar(&f.rounds, "rounds", 3, "throughput rounds; medians are reported, and judged from 3 rounds up")
	flag.DurationVar(&f.settle, "settle", time.Minute, "before each round and the steady state, wait up to this long for the load to fall to the number of cores (0: do not wait)")
	flag.BoolVar(&f.noPriorityQueue, "no-priority-queue", false, "run our controllers on client-go's plain workqueue instead of controller-runtime's priority queue")
	flag.BoolVar(&f.diag, "diag", false, "print controller-runtime's reconcile and queue timings for each run of ours")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the controller during the first round's events-none backlog (the CPU target's variant) to this file, and of the events-all and budget backlogs to it with .all and .budget appended; with -reclaim-only, of the first round's ShadowPod watch backlogs to it with .watch-true and .watch-false appended; with -metering-only, of the first round's two children to it with .metering-on and .metering-off appended")
	flag.StringVar(&f.scaleN, "scale-n", "0", "slices held by one replica in the scale phase, e.g. 50000 or 10000,50000 to compare sizes (0: no scale phase; it takes far longer than the rest)")
	flag.IntVar(&f.scaleFresh, "scale-fresh", 20, "scale phase: fresh slices created when the leader stops, for the standby to decide")
	flag.BoolVar(&f.scaleCold, "scale-cold", true, "scale phase: also time a standby taking over without EnableWarmup")
	flag.BoolVar(&f.scaleOnly, "scale-only", false, "run the scale phase only (with -scale-n)")
	flag.IntVar(&f.memChild, "mem-child", -1, "internal: run as the memory-measuring child")
	flag.BoolVar(&f.trim, "trim", false, "internal: child uses the trimming cache transform")
	flag.BoolVar(&f.memEvaluated, "mem-evaluated", false, "internal: child measures once its handler was called for every slice")
	flag.BoolVar(&f.viewOnly, "view-only", false, "run the status.class view's phase alone: heap per slice of the view beside the typed slice cache (-view-n)")
	flag.StringVar(&f.viewN, "view-n", "10000,50000", "status.class view phase: slice counts the cluster holds when measured")
	flag.StringVar(&f.cfgFile, "config", "", "internal: child's API server config")
	flag.StringVar(&f.scaleChild, "scale-child", "", "internal: run as a replica of the scale phase")
	flag.IntVar(&f.sbsN, "sbs-n", 2000, "side by side: slices each process (example manager, template-shaped controller, plain client) decides alone, on a control plane of its own (0: no side by side)")
	flag.BoolVar(&f.sbsOnly, "sbs-only", false, "run the side by side only")
	flag.StringVar(&f.sbsChild, "sbs-child", "", "internal: run as a process of the side by side (template or plain)")
	flag.BoolVar(&f.splitCores, "split-cores", false, "run the API server and etcd on core 0 and this process (the controllers measured and their load) on the other cores, as where the API server has machines of its own (Linux, 2 cores or more)")
	flag.BoolVar(&f.reclaimOnly, "reclaim-only", false, "run the reclaim phase alone: reclaim latency, the ShadowPod watch on vs off, heap per ShadowPod")
	flag.BoolVar(&f.podsMemOnly, "pods-mem-only", false, "with -reclaim-only, run only its heap per ShadowPod (1 and 10 budgets in one set)")
	flag.IntVar(&f.reclaimN, "reclaim-n", 50, "reclaim phase: reclaims timed")
	flag.IntVar(&f.podsN, "pods-n", 2000, "reclaim phase: ShadowPods present while the watch on/off backlogs run")
	flag.IntVar(&f.podsMemN, "pods-mem-n", 50000, "reclaim phase: ShadowPods counted for the heap per ShadowPod, by 1 budget and by 10 in one set, each round")
	flag.IntVar(&f.podsChild, "pods-child", -1, "internal: run as the ShadowPod memory child")
	flag.IntVar(&f.podsBudgets, "pods-budgets", 1, "internal: the ShadowPod memory child's budgets (1, or one per class)")
	flag.StringVar(&f.podsNS, "pods-ns", podMemNS, "internal: the ShadowPod memory child's namespace")
	flag.StringVar(&f.podsHeapProfile, "pods-heap-profile", "", "reclaim phase: each heap per ShadowPod child writes a heap profile to this file, .pods-N.budgets-B appended")
	flag.BoolVar(&f.tailOnly, "tail-only", false, "run the tail phase alone: the steady-state latency after a backlog (-tail-backlog, then -tail-n at -rate), ours and a bare informer + status patch loop, each slow slice's split and the GC in the window")
	flag.IntVar(&f.tailBacklog, "tail-backlog", 2000, "tail phase: undecided slices each variant decides before the steady state")
	flag.IntVar(&f.tailN, "tail-n", 200, "tail phase: slices created at -rate after the backlog")
	flag.BoolVar(&f.tailProcess, "tail-process", false, "tail phase: add the example manager as a variant, a process of its own with leader election and -workers workers, split from its own metrics (queue wait, reconcile time, GC)")
	flag.DurationVar(&f.tailPoll, "tail-poll", 0, "tail phase: list the variant's namespace (its backlog's slices with it) this often through the steady state, as the side by side's parent polls its decisions (0: never)")
	flag.DurationVar(&f.tailSlow, "tail-slow", 50*time.Millisecond, "tail phase: a slice slower than this, create to decision, is split into its steps")
	flag.StringVar(&f.sbsClass, "sbs-class", "", "internal: the class the side by side's child serves")
	flag.BoolVar(&f.meteringOnly, "metering-only", false, "run the metering phase alone: decisions/s and CPU per decision of the budget variant's backlog (-n slices, -k classes, -workers) with metering compiled in and out (-tags sliceclass_nometering), two builds of this bench from the module it is run in, alternating for -rounds rounds, each run a process of its own")
	flag.StringVar(&f.meteringChild, "metering-child", "", "internal: run as the metering phase's child deciding this backlog")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())

	if f.sbsChild != "" {
		if err := sbsChild(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if f.scaleChild != "" {
		if err := scaleChild(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if f.meteringChild != "" {
		if err := meteringChild(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if f.podsChild >= 0 {
		if err := podsChild(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if f.memChild >= 0 {
		if err := memChild(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	judged, err := run(f)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	case !judged:
		os.Exit(exitNoVerdict)
	}
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }

// run starts a control plane, runs the phases in order, each adding its
// rows to one table, and prints it. It reports whether the table has a
// verdict.
func run(f flags) (bool, error) {
	if f.n < 2 || f.k < 1 || f.workers < f.k || f.rounds < 1 || f.rate <= 0 || f.latencyN < 1 {
		return false, fmt.Errorf("need n ≥ 2 (a rate runs from the first decision to the last), k ≥ 1, workers ≥ k, rounds ≥ 1, rate > 0 and latency-n ≥ 1 (got n=%d k=%d workers=%d rounds=%d rate=%g latency-n=%d)",
			f.n, f.k, f.workers, f.rounds, f.rate, f.latencyN)
	}
	sizes, err := parseScaleN(f.scaleN)
	if err != nil {
		return false, err
	}
	if f.scaleOnly && len(sizes) == 0 {
		return false, fmt.Errorf("-scale-only needs -scale-n")
	}
	if len(sizes) > 0 && f.scaleFresh < 1 {
		return false, fmt.Errorf("-scale-fresh must be at least 1, got %d", f.scaleFresh)
	}
	switch {
	case f.sbsN < 0:
		return false, fmt.Errorf("-sbs-n must be at least 0, got %d", f.sbsN)
	case f.sbsOnly && f.sbsN == 0:
		return false, fmt.Errorf("-sbs-only needs -sbs-n above 0")
	case f.sbsOnly && (f.scaleOnly || len(sizes) > 0):
		return false, fmt.Errorf("-sbs-only runs the side by side alone: drop -scale-only and -scale-n")
	}
	start := time.Now()
	ctx := context.Background()
	t := table{loads: loadWatch{cores: goruntime.NumCPU(), settle: f.settle}}
	t.add("machine", fmt.Sprintf("%d cores shared by API server, etcd, controller", t.loads.cores))
	if f.sbsOnly {
		// The side by side starts a control plane of its own.
		phase := time.Now()
		if err := sideBySidePhase(ctx, f, &t); err != nil {
			return false, err
		}
		t.add("wall time: side by side (control plane, build and slice creation included)", round(time.Since(phase)))
		return report(f, t)
	}
	say("starting the control plane...")
	cp, err := controlplane.New()
	if err != nil {
		return false, err
	}
	defer func() { _ = cp.Stop() }()
	if f.splitCores {
		cores, err := splitCores()
		if err != nil {
			return false, err
		}
		t.set("machine", fmt.Sprintf("%d cores: %s", t.loads.cores, cores))
	}
	if f.viewOnly {
		phase := time.Now()
		if err := viewPhase(ctx, cp, f, &t); err != nil {
			return false, err
		}
		t.add("wall time: view phase (slice creation included)", round(time.Since(phase)))
		return report(f, t)
	}
	if f.reclaimOnly {
		if f.reclaimN < 1 || f.podsN < 0 || f.podsMemN < 1 {
			return false, fmt.Errorf("-reclaim-n and -pods-mem-n must be at least 1, -pods-n at least 0")
		}
		phase := time.Now()
		run := reclaimPhase
		if f.podsMemOnly {
			run = shadowPodMemory
		}
		if err := run(ctx, cp, f, &t); err != nil {
			return false, err
		}
		t.add("wall time: reclaim phase (pod creation included)", round(time.Since(phase)))
		return report(f, t)
	}

	if f.tailOnly {
		if f.tailBacklog < 0 || f.tailN < 1 || f.tailSlow <= 0 {
			return false, fmt.Errorf("-tail-backlog must be at least 0, -tail-n at least 1, -tail-slow above 0")
		}
		phase := time.Now()
		if err := tailPhase(ctx, cp, f, &t); err != nil {
			return false, err
		}
		t.add("wall time: tail phase (slice creation included)", round(time.Since(phase)))
		return report(f, t)
	}

	if f.meteringOnly {
		phase := time.Now()
		if err := meteringPhase(ctx, cp, f, &t); err != nil {
			return false, err
		}
		t.add("wall time: metering phase (builds and slice creation included)", round(time.Since(phase)))
		return report(f, t)
	}

	if !f.scaleOnly {
		t.add("slices (N) / classes (K) / concurrency", fmt.Sprintf("%d / %d / %d (%d per class)", f.n, f.k, f.concurrency(), f.perClass()))
		// a) and b): throughput rounds, ours and the baselines interleaved.
		phase := time.Now()
		if err := throughputPhase(ctx, cp, f, &t); err != nil {
			return false, err
		}
		throughputTook := time.Since(phase)
		// c) steady-state latency.
		phase = time.Now()
		if err := latencyPhase(ctx, cp, f, &t); err != nil {
			return false, err
		}
		latencyTook := time.Since(phase)
		// e) memory, each configuration in a fresh child process.
		phase = time.Now()
		if err := memoryPhase(ctx, cp, f, &t); err != nil {
			return false, err
		}
		memoryTook := time.Since(phase)
		// g) the side by side, on a control plane of its own.
		sbsTook := "off"
		if f.sbsN > 0 {
			phase = time.Now()
			if err := sideBySidePhase(ctx, f, &t); err != nil {
				return false, err
			}
			sbsTook = round(time.Since(phase))
		}
		t.add("wall time: throughput / steady state / memory / side by side", fmt.Sprintf("%s / %s / %s / %s", round(throughputTook), round(latencyTook), round(memoryTook), sbsTook))
		// The target is the default run's: the opt-in scale phase is apart.
		took := time.Since(start)
		metric := "bench wall time"
		if len(sizes) > 0 {
			metric += " (without the scale phase)"
		}
		t.target(metric, round(took), "< 10m", took < 10*time.Minute)
	}
	if len(sizes) > 0 {
		// f) one replica holding many slices, and standbys taking over.
		phase := time.Now()
		if err := scalePhase(ctx, cp, f, &t); err != nil {
			return false, err
		}
		t.add("wall time: scale phase (slice creation included)", round(time.Since(phase)))
	}
	return report(f, t)
}

// report prints t, and writes it as markdown with -markdown, and reports
// whether it has a verdict.
func report(f flags, t table) (bool, error) {
	t.add("load (1 min) at the start→end of each stretch", t.loads.summary())

	why := noVerdict(f.rounds, t.loads.checks, t.loads.cores)
	printTable(os.Stdout, t, why)
	if f.markdown != "" {
		if err := writeMarkdown(f.markdown, t, why); err != nil {
			return false, err
		}
	}
	return len(why) == 0, nil
}

func round(d time.Duration) string { return d.Round(time.Second).String() }

// row is one line of the table; target and ok only for targets.
type row struct {
	metric, value, target string
	ok                    bool
}

// table collects the report: the targets and the other figures, each in
// the order they are added, and the load around each measured stretch.
type table struct {
	targets, figures []row
	// extra holds sections of their own (the scale phase's), printed after
	// the figures.
	extra []section
	loads loadWatch
}

// add adds a figure.
func (t *table) add(metric, value string) {
	t.figures = append(t.figures, row{metric: metric, value: value})
}

// set replaces the value of the figure named metric, or adds it.
func (t *table) set(metric, value string) {
	for i := range t.figures {
		if t.figures[i].metric == metric {
			t.figures[i].value = value
			return
		}
	}
	t.add(metric, value)
}

// target adds a target: the measured value, the target and whether it is
// met.
func (t *table) target(metric, value, target string, ok bool) {
	t.targets = append(t.targets, row{metric, value, target, ok})
}

// verdictLine says how many targets are met and which are not.
func verdictLine(targets []row) string {
	var missed []string
	for _, r := range targets {
		if !r.ok {
			missed = append(missed, r.metric)
		}
	}
	if len(targets) == 0 {
		return "verdict: no targets in this run (figures only)"
	}
	s := fmt.Sprintf("verdict: %d of %d targets met", len(targets)-len(missed), len(targets))
	if len(missed) > 0 {
		s += "; missed: " + strings.Join(missed, "; ")
	}
	return s
}

// sections returns the table as titled sections of cells. With a verdict
// (no reasons against one), the targets carry their target and whether it
// is met; without, every value is marked noisy and there is neither.
func sections(t table, why []string) []section {
	judged := len(why) == 0
	value := "VALUE"
	if !judged {
		value = "VALUE (NOISY)"
	}
	targets := section{title: "TARGETS", header: []string{"METRIC", value}}
	if judged {
		targets.header = append(targets.header, "TARGET", "OK")
	}
	for _, r := range t.targets {
		cells := []string{r.metric, r.value}
		if judged {
			cells = append(cells, r.target, okStr(r.ok))
		}
		targets.rows = append(targets.rows, cells)
	}
	figures := section{title: "FIGURES", header: []string{"METRIC", value}}
	for _, r := range t.figures {
		figures.rows = append(figures.rows, []string{r.metric, r.value})
	}
	return append([]section{targets, figures}, t.extra...)
}

// section is a titled table of cells.
type section struct {
	title  string
	header []string
	rows   [][]string
}

// conclusion is what follows the table: the verdict, or why there is none.
func conclusion(t table, why []string) []string {
	if len(why) == 0 {
		return []string{verdictLine(t.targets)}
	}
	return append([]string{"no verdict: the figures above are noisy"}, why...)
}

func printTable(out io.Writer, t table, why []string) {
	for i, s := range sections(t, why) {
		if i > 0 {
			_, _ = fmt.Fprintln(out)
		}
		_, _ = fmt.Fprintln(out, s.title)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, strings.Join(s.header, "\t"))
		for _, r := range s.rows {
			_, _ = fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		_ = tw.Flush()
	}
	_, _ = fmt.Fprintln(out)
	for _, l := range conclusion(t, why) {
		_, _ = fmt.Fprintln(out, l)
	}
}

func writeMarkdown(path string, t table, why []string) error {
	var b strings.Builder
	for _, s := range sections(t, why) {
		fmt.Fprintf(&b, "**%s**\n\n| %s |\n|%s\n", strings.ToLower(s.title), strings.Join(s.header, " | "), strings.Repeat("---|", len(s.header)))
		for _, r := range s.rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
		}
		b.WriteString("\n")
	}
	for _, l := range conclusion(t, why) {
		b.WriteString(l + "\n\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func okStr(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
