package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/metering"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// The metering phase (-metering-only, issue 52): what metering costs a
// decision. Metering is compiled in or out (the build tag
// sliceclass_nometering), so the two variants are two binaries of this
// bench, built here by the same command but for the tag, each deciding its
// own backlog in a process of its own (meteringChild): the throughput
// phase's budget variant (f.k classes drawing from one budget that admits
// every slice, decision events off, f.workers workers), whose every
// decision goes through the budget's books and so, with metering on,
// through the meter. The rounds alternate which variant goes first (on off,
// off on, ...), so that the growing etcd and the machine's drift hit both
// alike, and the table has each variant's median decisions/s and CPU per
// decision with the range of the rounds, and the ratios on / off with the
// range of the per-round ratios.

// meteringVariant is one of the two binaries the phase compares.
type meteringVariant struct {
	// name is the variant's short name, in namespaces and profile names.
	name, label string
	// on is whether the binary has metering compiled in.
	on   bool
	tags []string
	bin  string
}

// meteringResult is what a metering child prints, as JSON, once its
// backlog is decided.
type meteringResult struct {
	// Metering is metering.Enabled in the child: whether the binary has
	// metering compiled in.
	Metering bool `json:"metering"`
	// Rate is decisions/s from the first decision to the last.
	Rate float64 `json:"rate"`
	// CPUMicros is the child's CPU (user + system) per decision, in µs,
	// from its synced cache to the last decision (and a second after).
	CPUMicros float64 `json:"cpuMicros"`
	// WritesPerDecision is the status writes the API server counted per
	// decision.
	WritesPerDecision float64 `json:"writesPerDecision"`
	// ConsumerSeries is the number of sliceclass_consumer_granted series
	// the child's classes export once the backlog is decided.
	ConsumerSeries int `json:"consumerSeries"`
}

// meteringPhase builds the two binaries, runs f.rounds rounds of one
// backlog decided by each, and adds the figures to t.
func meteringPhase(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table) error {
	dir, err := os.MkdirTemp("", "sliceclass-bench-metering-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	variants := []*meteringVariant{
		{name: "on", label: "metering on", on: true},
		{name: "off", label: "metering off (-tags sliceclass_nometering)", tags: []string{"-tags", "sliceclass_nometering"}},
	}
	for _, v := range variants {
		v.bin = filepath.Join(dir, "bench-metering-"+v.name)
		if err := buildBench(ctx, v.bin, v.tags...); err != nil {
			return err
		}
	}
	cfgFile, err := writeConfig(cp.Config)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(cfgFile) }()

	runs := make([]series, len(variants))
	var writes []float64
	var metered int
	for round := range f.rounds {
		end := t.loads.start(fmt.Sprintf("metering round %d/%d", round+1, f.rounds))
		for i := range variants {
			m := (i + round) % len(variants)
			v := variants[m]
			prefix := fmt.Sprintf("m%d-%s", round, v.name)
			say("metering round %d/%d: %s: creating a backlog of %d slices...", round+1, f.rounds, v.label, f.n)
			if err := oursBacklog(ctx, cp, f, prefix); err != nil {
				return err
			}
			var profile string
			if round == 0 && f.cpuProfile != "" {
				profile = f.cpuProfile + ".metering-" + v.name
			}
			say("metering round %d/%d: %s: deciding it in a process of its own...", round+1, f.rounds, v.label)
			res, err := runMeteringChild(ctx, v, cfgFile, f, prefix, profile)
			if err != nil {
				return err
			}
			if err := res.check(v); err != nil {
				return err
			}
			if v.on {
				metered = res.ConsumerSeries
			}
			runs[m].rate = append(runs[m].rate, res.Rate)
			runs[m].cpu = append(runs[m].cpu, res.CPUMicros)
			writes = append(writes, res.WritesPerDecision)
			say("metering round %d/%d: %s: %.0f decisions/s, %.0f µs CPU per decision", round+1, f.rounds, v.label, res.Rate, res.CPUMicros)
		}
		end()
	}
	on, off := runs[0], runs[1]
	t.add("metering: rounds, each variant once per round, first in turn (medians below, range of the rounds in brackets)", strconv.Itoa(f.rounds))
	t.add("metering: each run's backlog", fmt.Sprintf("%d slices, %d classes drawing from one budget, %d workers, decision events none, decided by a fresh process", f.n, f.k, f.concurrency()))
	for m, v := range variants {
		t.add("metering: decisions/s, "+v.label, fmt.Sprintf("%.0f %s", median(runs[m].rate), spread(runs[m].rate)))
	}
	for m, v := range variants {
		t.add("metering: CPU per decision (µs), the deciding process's, "+v.label, fmt.Sprintf("%.0f %s", median(runs[m].cpu), spread(runs[m].cpu)))
	}
	t.add("metering: decisions/s, on / off", ratioStr(on.rate, off.rate))
	t.add("metering: CPU per decision, on / off", ratioStr(on.cpu, off.cpu))
	t.add("metering: status writes per decision, all runs", fmt.Sprintf("%.2f %s", median(writes), spreadFine(writes)))
	t.add("metering: consumer series metered (on; sliceclass_consumer_granted, one per consumer and resource)", strconv.Itoa(metered))
	return nil
}

// check refuses a child's result that does not measure what v stands for:
// a binary built with or without metering other than asked (a -tags in
// GOFLAGS, say), metering on that metered no consumer (the comparison would
// be of nothing), or off that exported consumer series.
func (r meteringResult) check(v *meteringVariant) error {
	switch {
	case r.Metering != v.on:
		return fmt.Errorf("metering: the %q binary has metering.Enabled=%v, want %v: check GOFLAGS for a -tags that overrides the bench's", v.name, r.Metering, v.on)
	case v.on && r.ConsumerSeries == 0:
		return fmt.Errorf("metering: with metering on, the classes exported no %s series once the backlog was decided: the run metered nothing", metering.MetricGranted)
	case !v.on && r.ConsumerSeries != 0:
		return fmt.Errorf("metering: with metering compiled out, the classes exported %d %s series", r.ConsumerSeries, metering.MetricGranted)
	}
	return nil
}

// spreadFine is spread with two decimals.
func spreadFine(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("(%.2f–%.2f)", lo, hi)
}

// buildBench builds this bench, from the module it is run in, into bin,
// with the go build flags args.
func buildBench(ctx context.Context, bin string, args ...string) error {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("metering: go env GOMOD: %w", err)
	}
	root, err := moduleRoot(string(out))
	if err != nil {
		return fmt.Errorf("metering: %w", err)
	}
	say("metering: building the bench (%v) in %s...", args, root)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, args...), "-o", bin, "./bench")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("metering: building ./bench %v in %s: %w: %s", args, root, err, bytes.TrimSpace(out))
	}
	say("metering: built it in %s", round(time.Since(start)))
	return nil
}

// runMeteringChild runs v's binary to decide the backlog of prefix on the
// control plane cfgFile names, and returns what it measured.
func runMeteringChild(ctx context.Context, v *meteringVariant, cfgFile string, f flags, prefix, profile string) (meteringResult, error) {
	args := []string{"-metering-child", prefix, "-config", cfgFile,
		"-n", strconv.Itoa(f.n), "-k", strconv.Itoa(f.k), "-workers", strconv.Itoa(f.workers),
		"-no-priority-queue=" + strconv.FormatBool(f.noPriorityQueue), "-diag=" + strconv.FormatBool(f.diag)}
	if profile != "" {
		args = append(args, "-cpuprofile", profile)
	}
	cmd := exec.CommandContext(ctx, v.bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return meteringResult{}, fmt.Errorf("metering child (%s, %s): %w", v.name, prefix, err)
	}
	var r meteringResult
	if err := json.Unmarshal(out, &r); err != nil {
		return meteringResult{}, fmt.Errorf("metering child (%s) output %q: %w", v.name, out, err)
	}
	return r, nil
}

// meteringChild decides the backlog of f.meteringChild (oursBacklog's
// prefix) on the API server of f.cfgFile, as the throughput phase's budget
// variant does in process, and prints a meteringResult as JSON.
func meteringChild(f flags) error {
	cfg, err := loadConfig(f.cfgFile)
	if err != nil {
		return err
	}
	// No client-side rate limit, as where the phases run in process (the
	// control plane's config allows 1,000 requests/s, which a backlog does
	// not reach): client-go's default of 5/s would be the figure measured.
	cfg.QPS = -1
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sdkscheme.Add} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	// Config, Client and Scheme are all oursDecide uses of a control plane.
	cp := &controlplane.ControlPlane{Config: cfg, Client: c, Scheme: scheme}
	res, err := oursDecide(context.Background(), cp, f, f.meteringChild, resourceslice.DecisionEventsNone, true, false, f.cpuProfile, nil)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(meteringResult{
		Metering: metering.Enabled, Rate: res.rate, CPUMicros: micros(res.cpu),
		WritesPerDecision: res.perDecision, ConsumerSeries: res.consumerSeries,
	})
}
