package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The tail phase's process variant (-tail-process): the example manager
// built and run as the side by side runs it, a process of its own, here
// with leader election and -workers workers. The bench sees only when a
// slice was created and when its decision reached the watch; the process's
// own metrics, read at the window's start and end, say where the time
// inside it went.

// startTailProcess starts the example manager serving p's class with
// leader election (its lease in the default namespace) and workers
// workers, and stops it when ctx ends; done receives how it stopped.
// metricsAddr is its metrics endpoint.
func startTailProcess(ctx context.Context, proc tailProc, p sbsProcess, workers int) (done <-chan error, metricsAddr string, err error) {
	r, err := startManager(proc.bin, proc.kubeconfig, p, proc.dir,
		"--leader-elect", "--leader-election-namespace", "default", "--leader-election-id", p.class(),
		"--max-concurrent-reconciles", strconv.Itoa(workers))
	if err != nil {
		return nil, "", err
	}
	if err := r.waitUp(sbsUpTimeout); err != nil {
		_ = r.stop()
		return nil, "", err
	}
	out := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			out <- r.stop()
		case <-r.exited:
			out <- r.exitedError()
		}
	}()
	return out, r.metricsAddr, nil
}

// procWindow is a reading, or a window's difference, of the manager
// process's own metrics: its class's queue wait and reconcile times
// (counts, and counts over 50 and 100 ms), its Go GC (cycles and pause
// total; the longest pause of the recent cycles at the window's end) and
// its CPU.
type procWindow struct {
	queue, queueOver10, queueOver100             int
	reconcile, reconcileOver50, reconcileOver100 int
	gcCycles                                     int
	gcPause, gcMaxPause                          time.Duration
	cpu                                          time.Duration
}

// String implements fmt.Stringer.
func (w procWindow) String() string {
	return fmt.Sprintf("queue wait over 10 / over 100 ms / all %d / %d / %d; reconcile over 50 / over 100 ms / all %d / %d / %d; "+
		"GC %d cycles, %.1f ms paused (longest recent %.2f ms); CPU %.2f s",
		w.queueOver10, w.queueOver100, w.queue, w.reconcileOver50, w.reconcileOver100, w.reconcile,
		w.gcCycles, float64(w.gcPause)/float64(time.Millisecond), float64(w.gcMaxPause)/float64(time.Millisecond), w.cpu.Seconds())
}

func (w procWindow) since(b procWindow) procWindow {
	return procWindow{
		queue: w.queue - b.queue, queueOver10: w.queueOver10 - b.queueOver10, queueOver100: w.queueOver100 - b.queueOver100,
		reconcile: w.reconcile - b.reconcile, reconcileOver50: w.reconcileOver50 - b.reconcileOver50,
		reconcileOver100: w.reconcileOver100 - b.reconcileOver100,
		gcCycles:         w.gcCycles - b.gcCycles, gcPause: w.gcPause - b.gcPause, gcMaxPause: w.gcMaxPause, cpu: w.cpu - b.cpu,
	}
}

// procSum sums the rounds' windows (the longest pause: the largest).
func procSum(rs []tailResult) procWindow {
	var s procWindow
	for _, r := range rs {
		w := r.proc
		s.queue += w.queue
		s.queueOver10 += w.queueOver10
		s.queueOver100 += w.queueOver100
		s.reconcile += w.reconcile
		s.reconcileOver50 += w.reconcileOver50
		s.reconcileOver100 += w.reconcileOver100
		s.gcCycles += w.gcCycles
		s.gcPause += w.gcPause
		s.gcMaxPause = max(s.gcMaxPause, w.gcMaxPause)
		s.cpu += w.cpu
	}
	return s
}

// readProcMetrics reads the manager's metrics at addr.
func readProcMetrics(addr string) (procWindow, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return procWindow{}, fmt.Errorf("tail: reading the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return procWindow{}, fmt.Errorf("tail: parsing the manager's metrics: %w", err)
	}
	var w procWindow
	// histogram sums every series of a family: its count, and the counts
	// above each bound given.
	histogram := func(name string, bounds ...float64) (int, []int) {
		all, over := 0, make([]int, len(bounds))
		mf := mfs[name]
		if mf == nil {
			return 0, over
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			n := int(h.GetSampleCount())
			all += n
			for i, b := range bounds {
				over[i] += n - cumulativeAt(h, b)
			}
		}
		return all, over
	}
	var over []int
	w.queue, over = histogram("workqueue_queue_duration_seconds", 0.01, 0.1)
	w.queueOver10, w.queueOver100 = over[0], over[1]
	w.reconcile, over = histogram("controller_runtime_reconcile_time_seconds", 0.05, 0.1)
	w.reconcileOver50, w.reconcileOver100 = over[0], over[1]
	if mf := mfs["go_gc_duration_seconds"]; mf != nil && len(mf.GetMetric()) > 0 {
		s := mf.GetMetric()[0].GetSummary()
		w.gcCycles = int(s.GetSampleCount())
		w.gcPause = time.Duration(s.GetSampleSum() * float64(time.Second))
		for _, q := range s.GetQuantile() {
			if q.GetQuantile() == 1 {
				w.gcMaxPause = time.Duration(q.GetValue() * float64(time.Second))
			}
		}
	}
	if mf := mfs["process_cpu_seconds_total"]; mf != nil && len(mf.GetMetric()) > 0 {
		w.cpu = time.Duration(mf.GetMetric()[0].GetCounter().GetValue() * float64(time.Second))
	}
	return w, nil
}

// cumulativeAt is h's count at or below bound, which must be one of its
// buckets' upper bounds (else the next bucket's count, an underestimate
// of what lies above bound).
func cumulativeAt(h *dto.Histogram, bound float64) int {
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() >= bound {
			return int(b.GetCumulativeCount())
		}
	}
	return int(h.GetSampleCount())
}
