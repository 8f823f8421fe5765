package soak

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
)

const (
	// sampleEvery is the sampling period.
	sampleEvery = 5 * time.Second
	// backlogAge is how long a slice may wait for its decision before it
	// counts as backlog: well above the create→decision latency of an idle
	// manager, so the backlog counts only slices the controllers fell behind on.
	backlogAge = 10 * time.Second
)

// sample is one reading of the test process and of the slices. The process
// hosts both the manager and the churn generator (kube-apiserver and etcd
// are their own processes): its heap and goroutines are the sum of both.
type sample struct {
	at    time.Duration // since the manager started
	phase string
	// heapAlloc and heapInuse are read right after a forced GC: live heap.
	heapAlloc, heapInuse uint64
	goroutines           int
	// slices, undecided and backlog are read from the manager's cache:
	// undecided has no Resources decision; backlog is undecided and older
	// than backlogAge.
	slices, undecided, backlog int
	// decisions is the SDK's decisions counter (transitions, all classes).
	decisions float64
}

// sampler takes a sample every sampleEvery until stopped.
type sampler struct {
	cache client.Reader
	reg   prometheus.Gatherer
	start time.Time

	mu      sync.Mutex
	phase   string
	samples []sample
	err     error
}

func (s *sampler) setPhase(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase = p
}

// run samples until ctx ends, then takes one last sample.
func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s.takeSample(context.WithoutCancel(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *sampler) takeSample(ctx context.Context) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	smp := sample{at: time.Since(s.start).Truncate(time.Second), heapAlloc: ms.HeapAlloc, heapInuse: ms.HeapInuse, goroutines: runtime.NumGoroutine()}
	var err error
	smp.slices, smp.undecided, smp.backlog, err = countSlices(ctx, s.cache)
	if err == nil {
		smp.decisions, err = decisionsTotal(s.reg)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	smp.phase = s.phase
	if err != nil && s.err == nil {
		s.err = err
	}
	s.samples = append(s.samples, smp)
}

// all returns the samples taken so far and the first error met.
func (s *sampler) all() ([]sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...), s.err
}

// countSlices counts the slices of the served classes in the cache, those
// without a decision, and those of them older than backlogAge. It lists
// without copying: the counts read each object and keep nothing.
func countSlices(ctx context.Context, c client.Reader) (total, undecided, backlog int, err error) {
	var list authv1beta1.ResourceSliceList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, 0, fmt.Errorf("listing slices from the cache: %w", err)
	}
	old := time.Now().Add(-backlogAge)
	served := map[string]bool{}
	for _, c := range soakClasses() {
		served[c] = true
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if !served[string(rs.Spec.Class)] {
			continue
		}
		total++
		if conditions.IsDecided(rs) {
			continue
		}
		undecided++
		if rs.CreationTimestamp.Time.Before(old) {
			backlog++
		}
	}
	return total, undecided, backlog, nil
}

// decisionsTotal sums the SDK's decisions counter over classes and outcomes.
func decisionsTotal(g prometheus.Gatherer) (float64, error) {
	families, err := g.Gather()
	if err != nil {
		return 0, fmt.Errorf("gathering metrics: %w", err)
	}
	var sum float64
	for _, mf := range families {
		if mf.GetName() != "sliceclass_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, nil
}

// window summarises consecutive samples.
type window struct {
	from, to time.Duration
	// heapMiB is the median live heap (HeapAlloc after GC): a sample taken
	// while a burst of writes is in flight reads a few MiB high, and the
	// median ignores such spikes where a mean would not. goroutines is the
	// most seen.
	heapMiB    float64
	goroutines int
}

func summarize(ss []sample) window {
	w := window{from: ss[0].at, to: ss[len(ss)-1].at}
	heaps := make([]float64, 0, len(ss))
	for _, s := range ss {
		heaps = append(heaps, mib(s.heapAlloc))
		w.goroutines = max(w.goroutines, s.goroutines)
	}
	slices.Sort(heaps)
	w.heapMiB = heaps[len(heaps)/2]
	if len(heaps)%2 == 0 {
		w.heapMiB = (heaps[len(heaps)/2-1] + heaps[len(heaps)/2]) / 2
	}
	return w
}

func (w window) String() string {
	return fmt.Sprintf("%.1f MiB, %d goroutines (%s–%s)", w.heapMiB, w.goroutines, w.from, w.to)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// verdict is what the samples say about the churn.
type verdict struct {
	// first and last are the first and last windows after the warm-up.
	first, last window
	// maxBacklog is the largest backlog sampled during the churn.
	maxBacklog int
	// peakHeapMiB is the largest live heap of any sample, creation included.
	peakHeapMiB float64
	// heapSlope is the least-squares slope of the live heap after the
	// warm-up, in MiB per minute: reported, not bounded, as it says how
	// small a leak the windows' ratio would miss.
	heapSlope float64
}

// judge splits the churn's samples: the first third is the warm-up; of the
// rest, the first and the last quarter (at least two samples each) are the
// windows compared.
func judge(ss []sample) (verdict, error) {
	var v verdict
	var churned []sample
	for _, s := range ss {
		v.peakHeapMiB = max(v.peakHeapMiB, mib(s.heapAlloc))
		if s.phase == "churn" {
			churned = append(churned, s)
			v.maxBacklog = max(v.maxBacklog, s.backlog)
		}
	}
	if len(churned) < 6 {
		return v, fmt.Errorf("%d samples in the churn, need 6: make it longer than %s", len(churned), 6*sampleEvery)
	}
	post := churned[len(churned)/3:]
	n := max(2, len(post)/4)
	v.first, v.last = summarize(post[:n]), summarize(post[len(post)-n:])
	v.heapSlope = slope(post)
	return v, nil
}

// slope fits heap (MiB) against time (minutes) by least squares.
func slope(ss []sample) float64 {
	var sx, sy, sxx, sxy float64
	for _, s := range ss {
		x, y := s.at.Minutes(), mib(s.heapAlloc)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(ss))
	if d := n*sxx - sx*sx; d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}

// problems lists the bounds the verdict breaks.
func (v verdict) problems() []string {
	var out []string
	if v.last.heapMiB > heapGrowthBound*v.first.heapMiB {
		out = append(out, fmt.Sprintf("heap grew more than x%.2f: first window %s, last %s", heapGrowthBound, v.first, v.last))
	}
	if v.last.goroutines > v.first.goroutines+goroutineGrowthBound {
		out = append(out, fmt.Sprintf("goroutines grew by more than %d: first window %s, last %s", goroutineGrowthBound, v.first, v.last))
	}
	if v.maxBacklog > backlogBound {
		out = append(out, fmt.Sprintf("decisions fell behind during the churn: backlog %d, bound %d", v.maxBacklog, backlogBound))
	}
	return out
}

// table renders the samples, one line each.
func table(ss []sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%8s  %-8s %10s %10s %10s %7s %9s %8s %10s\n",
		"time", "phase", "heap MiB", "inuse MiB", "goroutines", "slices", "undecided", "backlog", "decisions")
	for _, s := range ss {
		fmt.Fprintf(&b, "%8s  %-8s %10.1f %10.1f %10d %7d %9d %8d %10.0f\n",
			s.at, s.phase, mib(s.heapAlloc), mib(s.heapInuse), s.goroutines, s.slices, s.undecided, s.backlog, s.decisions)
	}
	return b.String()
}
