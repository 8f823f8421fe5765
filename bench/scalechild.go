package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// Leader election of the scale phase's replicas: short, as in the failover
// tests, so that a takeover measures the standby rather than the lease.
// The leader releases the Lease when it stops.
const (
	scaleLeaseDuration = 4 * time.Second
	scaleRenewDeadline = 3 * time.Second
	scaleRetryPeriod   = 500 * time.Millisecond
)

// scaleSettle is how long a replica lets its heap settle before it is
// measured, as memChild does.
const scaleSettle = 2 * time.Second

// scaleChildSpec says what one replica of the scale phase does. The parent
// passes it as JSON in -scale-child.
type scaleChildSpec struct {
	// Size selects the slices the replica's cache holds: those of the
	// phase's run at that size (label scaleLabel); 0 selects none.
	Size int `json:"size"`
	// Serve is how many handler calls the replica waits for before it
	// reports "evaluated": every slice it caches, re-evaluated once.
	Serve int `json:"serve"`
	// Want is how many decisions (slices written Accepted) it waits for
	// before it reports "decided".
	Want int `json:"want"`
	// Election names the leader-election Lease; "" runs without leader
	// election.
	Election string `json:"election,omitempty"`
	// Warmup sets the manager's Controller.EnableWarmup.
	Warmup bool `json:"warmup"`
	// Standby reports "ready", with the replica's memory, once it waits
	// for the Lease (and, with Warmup, once its slice cache has synced).
	Standby bool `json:"standby"`
	// Measure reports "memory" once Want slices are decided and Serve
	// evaluated.
	Measure bool `json:"measure"`
}

// scaleEvent is one line a replica prints on stdout: what happened and
// when (unix nanoseconds, the parent's clock as well), with its memory for
// "ready" and "memory".
type scaleEvent struct {
	Event string `json:"event"`
	At    int64  `json:"at"`
	// Heap is runtime HeapInuse after GC; RSS and Peak the process's
	// resident set now and at its highest.
	Heap uint64 `json:"heap,omitempty"`
	RSS  uint64 `json:"rss,omitempty"`
	Peak uint64 `json:"peak,omitempty"`
	// Cached is how many slices the replica's cache holds ("memory").
	Cached int `json:"cached,omitempty"`
	// SliceRead says whether the replica had read slices ("ready": before
	// it leads).
	SliceRead bool `json:"sliceRead,omitempty"`
}

func (e scaleEvent) at() time.Time { return time.Unix(0, e.At) }

// The events a replica reports, in the order they can happen.
const (
	evStart     = "start"     // just before the manager starts
	evReady     = "ready"     // a standby waits for the Lease (Standby)
	evElected   = "elected"   // the manager leads
	evSynced    = "synced"    // its slice cache has synced
	evFirst     = "first"     // its first decision is written
	evDecided   = "decided"   // Want decisions are written
	evEvaluated = "evaluated" // Serve handler calls were made
	evMemory    = "memory"    // its memory once decided and evaluated (Measure)
)

// scaleChild runs one replica of the scale phase (flag -scale-child): a
// manager built as the example manager builds it (its scheme, a trimmed
// cache of only what the controllers read, client-side rate limit off)
// serving the scale classes with a handler that grants everything and no
// decision events, and reports what the parent times as JSON lines on
// stdout. It stops, releasing its Lease, when its stdin closes: the parent
// closes it to stop the replica, and it closes when the parent dies.
func scaleChild(f flags) error {
	// Leader election logs through klog: keep the parent's output to its
	// own progress lines.
	klog.SetLogger(logr.Discard())
	var spec scaleChildSpec
	if err := json.Unmarshal([]byte(f.scaleChild), &spec); err != nil {
		return fmt.Errorf("-scale-child: %w", err)
	}
	cfg, err := loadConfig(f.cfgFile)
	if err != nil {
		return err
	}
	cfg.QPS = -1
	tp := &scaleTap{electionID: spec.Election}
	cfg.Wrap(tp.wrap)
	mgr, err := manager.New(cfg, scaleManagerOptions(spec))
	if err != nil {
		return err
	}
	r := &scaleReplica{spec: spec, mgr: mgr, tap: tp, reg: prometheus.NewRegistry(),
		out: &eventWriter{enc: json.NewEncoder(os.Stdout)}, decided: make(chan struct{}), evaluated: make(chan struct{})}
	accept := acceptAll()
	counted := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		r.calls.Add(1)
		return accept.Handle(ctx, rs)
	})
	for c := range scaleClasses {
		if err := resourceslice.AddToManager(mgr, scaleClass(c), counted,
			resourceslice.WithDecisionEvents(resourceslice.DecisionEventsNone),
			resourceslice.WithMetricsRegisterer(r.reg)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	r.out.emit(scaleEvent{Event: evStart})
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	go func() {
		select {
		case <-mgr.Elected():
			r.out.emit(scaleEvent{Event: evElected})
		case <-ctx.Done():
		}
	}()
	go r.count(ctx)
	go r.observe(ctx)
	err = <-done
	if ctx.Err() != nil {
		// Stopped as asked: the Lease is released.
		return nil
	}
	return err
}

// scaleManagerOptions are the example manager's options (its scheme of
// Liqo's authentication types, a cache of only what the controllers read,
// managed fields stripped and slices trimmed) with the phase's leader
// election, and a cache of only the slices of the run at spec.Size: the
// API server also holds the earlier runs' and phases' slices, which a
// provider would not have.
func scaleManagerOptions(spec scaleChildSpec) manager.Options {
	scheme := runtime.NewScheme()
	_ = sdkscheme.Add(scheme)
	opts := manager.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                spec.Election != "",
		LeaderElectionID:              spec.Election,
		LeaderElectionNamespace:       scaleNamespace,
		LeaseDuration:                 ptr.To(scaleLeaseDuration),
		RenewDeadline:                 ptr.To(scaleRenewDeadline),
		RetryPeriod:                   ptr.To(scaleRetryPeriod),
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{EnableWarmup: ptr.To(spec.Warmup)},
		Cache: cache.Options{
			ReaderFailOnMissingInformer: true,
			DefaultTransform:            cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&authv1beta1.ResourceSlice{}: {Label: scaleSelector(spec.Size)},
			},
		},
	}
	resourceslice.DropUnreadSliceFields(&opts.Cache)
	return opts
}

// scaleSelector selects the slices of the run at size; none for 0.
func scaleSelector(size int) labels.Selector {
	v := "none"
	if size > 0 {
		v = strconv.Itoa(size)
	}
	return labels.SelectorFromSet(labels.Set{scaleLabel: v})
}

// scaleReplica is the running replica of scaleChild.
type scaleReplica struct {
	spec  scaleChildSpec
	mgr   manager.Manager
	tap   *scaleTap
	reg   *prometheus.Registry
	out   *eventWriter
	calls atomic.Int64
	// decided and evaluated close when Want decisions are written and
	// Serve handler calls made.
	decided, evaluated chan struct{}
}

// count reports the first decision, Want decisions and Serve handler
// calls, polling every 5 ms.
func (r *scaleReplica) count(ctx context.Context) {
	first, decided, evaluated := r.spec.Want == 0, r.spec.Want == 0, r.spec.Serve == 0
	if decided {
		close(r.decided)
	}
	if evaluated {
		close(r.evaluated)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !first || !decided || !evaluated {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d := decisions(r.reg)
		if !first && d >= 1 {
			first = true
			r.out.emit(scaleEvent{Event: evFirst})
		}
		if !decided && d >= r.spec.Want {
			decided = true
			r.out.emit(scaleEvent{Event: evDecided})
			close(r.decided)
		}
		if !evaluated && r.calls.Load() >= int64(r.spec.Serve) {
			evaluated = true
			r.out.emit(scaleEvent{Event: evEvaluated})
			close(r.evaluated)
		}
	}
}

// observe reports a standby ready, the slice cache synced and the memory
// once every slice is decided and evaluated.
func (r *scaleReplica) observe(ctx context.Context) {
	if r.spec.Standby {
		if !r.until(ctx, func() bool { return r.tap.electionTried.Load() }) {
			return
		}
		if r.spec.Warmup && !r.sliceCacheSynced(ctx) {
			return
		}
		ev := r.measure(evReady)
		ev.SliceRead = r.tap.sliceRead.Load()
		r.out.emit(ev)
	}
	if !r.sliceCacheSynced(ctx) {
		return
	}
	r.out.emit(scaleEvent{Event: evSynced})
	if !r.spec.Measure {
		return
	}
	for _, c := range []chan struct{}{r.decided, r.evaluated} {
		select {
		case <-c:
		case <-ctx.Done():
			return
		}
	}
	ev := r.measure(evMemory)
	ev.Cached = r.cached(ctx)
	r.out.emit(ev)
}

// sliceCacheSynced waits for the replica to read slices (its informer
// starting) and for its cache to sync, and reports whether it did before
// ctx ended.
func (r *scaleReplica) sliceCacheSynced(ctx context.Context) bool {
	return r.until(ctx, func() bool { return r.tap.sliceRead.Load() }) && r.mgr.GetCache().WaitForCacheSync(ctx)
}

// until polls cond every 5 ms until it holds (true) or ctx ends (false).
func (r *scaleReplica) until(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return true
}

// measure lets the heap settle and returns the event what with the
// process's memory.
func (r *scaleReplica) measure(what string) scaleEvent {
	time.Sleep(scaleSettle)
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return scaleEvent{Event: what, Heap: ms.HeapInuse, RSS: rss(), Peak: peakRSS()}
}

// cached is how many slices the slice informer's store holds (0 if it
// cannot tell): counted from the store's keys, since listing through the
// cache would copy every slice into the heap being measured.
func (r *scaleReplica) cached(ctx context.Context) int {
	inf, err := r.mgr.GetCache().GetInformer(ctx, &authv1beta1.ResourceSlice{})
	if err != nil {
		return 0
	}
	s, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return 0
	}
	return len(s.GetStore().ListKeys())
}

// eventWriter prints events as JSON lines, one writer at a time.
type eventWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// emit prints ev, stamped now unless it carries a time.
func (w *eventWriter) emit(ev scaleEvent) {
	if ev.At == 0 {
		ev.At = time.Now().UnixNano()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(ev)
}

// scaleTap sits in a replica's HTTP transport and records when it first
// read slices (its informer starting) and first asked for its
// leader-election Lease, as the failover tests' tap does.
type scaleTap struct {
	electionID               string
	sliceRead, electionTried atomic.Bool
}

// wrap is the tap as a rest.Config transport wrapper.
func (tp *scaleTap) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		path := req.URL.Path
		if req.Method == http.MethodGet && strings.HasSuffix(path, "/resourceslices") {
			tp.sliceRead.Store(true)
		}
		if tp.electionID != "" && strings.HasSuffix(path, "/leases/"+tp.electionID) {
			tp.electionTried.Store(true)
		}
		return next.RoundTrip(req)
	})
}

// roundTripperFunc adapts a function to http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
