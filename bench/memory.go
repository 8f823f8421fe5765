package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// memoryPhase creates the largest of the -mem-n counts of realistic,
// decided slices, measures a manager caching each count, untrimmed and
// trimmed, each in a fresh child process, and adds the heap, RSS and bytes
// per cached slice to t.
func memoryPhase(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table) error {
	counts, err := parseCounts("mem-n", f.memN)
	if err != nil {
		return err
	}
	largest := slices.Max(counts)
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
		if empty[trim], err = child(cfgFile, 0, trim, false); err != nil {
			return err
		}
	}
	perSlice := map[int]map[bool]float64{}
	for _, c := range counts {
		perSlice[c] = map[bool]float64{}
		for _, trim := range []bool{false, true} {
			say("memory: %d cached slices, trim=%v...", c, trim)
			m, err := child(cfgFile, c, trim, false)
			if err != nil {
				return err
			}
			per := (float64(m.HeapInuse) - float64(empty[trim].HeapInuse)) / float64(m.Slices)
			perSlice[c][trim] = per
			label := "untrimmed"
			if trim {
				label = "trimmed"
			}
			t.add(fmt.Sprintf("heap / RSS, %d slices cached, %s", c, label), fmt.Sprintf("%s / %s", mib(m.HeapInuse), mib(m.RSS)))
			t.add(fmt.Sprintf("bytes per cached slice, %d, %s", c, label), fmt.Sprintf("%.0f", per))
		}
		cut := 1 - perSlice[c][true]/perSlice[c][false]
		metric, value := fmt.Sprintf("trimming cuts bytes/slice at %d by", c), fmt.Sprintf("%.0f%%", cut*100)
		if c == largest {
			t.target(metric, value, "≥ 30%", cut >= 0.3)
		} else {
			t.add(metric, value)
		}
	}
	return nil
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

// loadConfig reads back the API server config writeConfig saved, for a
// child process.
func loadConfig(path string) (*rest.Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sc savedConfig
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, err
	}
	return &rest.Config{Host: sc.Host, TLSClientConfig: rest.TLSClientConfig{CAData: sc.CAData, CertData: sc.CertData, KeyData: sc.KeyData}}, nil
}

// child re-runs this binary to measure one memory configuration in a fresh
// process; with evaluated, the child measures only once its handler has
// been called for each of the n slices (every source of its controller,
// the status.class view included, has synced by then).
func child(cfgFile string, n int, trim, evaluated bool) (memResult, error) {
	self, err := os.Executable()
	if err != nil {
		return memResult{}, err
	}
	cmd := exec.Command(self, "-mem-child", strconv.Itoa(n), "-trim="+strconv.FormatBool(trim),
		"-mem-evaluated="+strconv.FormatBool(evaluated), "-config", cfgFile)
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

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// parseCounts parses the comma-separated counts of the flag name.
func parseCounts(name, s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive count", name, p)
		}
		out = append(out, n)
	}
	return out, nil
}

// memChild runs a manager serving class "mem" whose cache holds the first
// f.memChild slices of namespace "mem" (selected by their bucket label), lets
// it reconcile them (with f.memEvaluated, until its handler was called for
// each), and prints its settled heap and RSS as JSON.
func memChild(f flags) error {
	cfg, err := loadConfig(f.cfgFile)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := sdkscheme.Add(scheme); err != nil {
		return err
	}
	const ns = "mem"
	opts := manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			ByObject: map[client.Object]cache.ByObject{
				&authv1beta1.ResourceSlice{}: {Label: indexSelector(f.memChild)},
			},
		},
	}
	if f.trim {
		resourceslice.DropUnreadSliceFields(&opts.Cache)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return err
	}
	var calls atomic.Int64
	accept := acceptAll()
	counted := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		calls.Add(1)
		return accept.Handle(ctx, rs)
	})
	if err := resourceslice.AddToManager(mgr, "mem", counted, resourceslice.WithMaxConcurrentReconciles(2)); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	// Let the controller reconcile what it caches (every slice is already
	// decided, so it writes nothing), then measure a settled heap.
	var list authv1beta1.ResourceSliceList
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := mgr.GetClient().List(ctx, &list); err == nil && len(list.Items) >= f.memChild {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(list.Items) < f.memChild {
		return fmt.Errorf("cache holds %d slices, want %d", len(list.Items), f.memChild)
	}
	for f.memEvaluated && calls.Load() < int64(f.memChild) {
		if time.Now().After(deadline.Add(decideTimeout(f.memChild))) {
			return fmt.Errorf("the handler was called %d times, want %d", calls.Load(), f.memChild)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cached := len(list.Items)
	list = authv1beta1.ResourceSliceList{}
	time.Sleep(2 * time.Second)
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return json.NewEncoder(os.Stdout).Encode(memResult{HeapInuse: ms.HeapInuse, RSS: rss(), Slices: cached})
}

// indexSelector selects slices whose index label is below n. The parent
// labels slice i with bench.sliceclass.io/bucket = i/1000 so that a cache
// can hold a prefix.
func indexSelector(n int) labels.Selector {
	var buckets []string
	for b := 0; b*bucketSize < n; b++ {
		buckets = append(buckets, strconv.Itoa(b))
	}
	if len(buckets) == 0 {
		buckets = []string{"none"}
	}
	req, _ := labels.NewRequirement(bucketLabel, selection.In, buckets)
	return labels.NewSelector().Add(*req)
}

const (
	bucketLabel = "bench.sliceclass.io/bucket"
	bucketSize  = 1000
)

// rss is this process's resident set size; peakRSS its highest so far; 0
// when /proc cannot tell.
func rss() uint64 {
	m, _ := readProcMem(os.Getpid())
	return m.rss
}

func peakRSS() uint64 {
	m, _ := readProcMem(os.Getpid())
	return m.peak
}
