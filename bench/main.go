// Command bench measures a sliceclass class controller on a real control
// plane (kube-apiserver + etcd from envtest) and prints one table.
//
//	make bench                       # defaults: -n 2000 -k 4 -workers 4
//	go run ./bench -n 500 -markdown out.md
//
// Every throughput figure is a ratio against a baseline measured in the same
// run: W goroutines each making the same decision with one optimistic status
// patch through a plain client, the API server's limit for this work here.
//
// The phases live one to a file: throughput.go (backlog rounds of our
// controllers), baseline.go (the plain-client baselines they are set
// against), latency.go (steady state), memory.go (cache size, in child
// processes); fixtures.go creates slices as Liqo leaves them.
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
	diag                    bool
	noPriorityQueue         bool
	cpuProfile              string
	// child mode: measure the memory of a manager caching the "mem"
	// namespace's first N slices, then exit.
	memChild int
	trim     bool
	cfgFile  string
}

// perClass is each class's share of the workers; concurrency is the total
// that share adds up to, which the baselines use as is.
func (f flags) perClass() int    { return f.workers / f.k }
func (f flags) concurrency() int { return f.perClass() * f.k }

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

// run starts a control plane and runs the phases in order, each adding its
// rows to one table.
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
	var t table
	t.add("machine", fmt.Sprintf("%d cores shared by API server, etcd, controller", goruntime.NumCPU()), "", "")
	t.add("slices (N) / classes (K) / concurrency", fmt.Sprintf("%d / %d / %d (%d per class)", f.n, f.k, f.concurrency(), f.perClass()), "", "")

	// a) and b): throughput rounds, ours and the baselines interleaved.
	if err := throughputPhase(ctx, cp, f, &t); err != nil {
		return err
	}
	// c) steady-state latency.
	if err := latencyPhase(ctx, cp, f, &t); err != nil {
		return err
	}
	// e) memory, each configuration in a fresh child process.
	if err := memoryPhase(ctx, cp, f, &t); err != nil {
		return err
	}
	t.add("bench wall time", time.Since(start).Round(time.Second).String(), "< 10m", okStr(time.Since(start) < 10*time.Minute))

	printTable(os.Stdout, t.rows)
	if f.markdown != "" {
		return writeMarkdown(f.markdown, t.rows)
	}
	return nil
}

type row struct{ metric, value, target, ok string }

// table collects the report's rows in the order they are printed.
type table struct{ rows []row }

func (t *table) add(metric, value, target, ok string) {
	t.rows = append(t.rows, row{metric, value, target, ok})
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

func okStr(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
