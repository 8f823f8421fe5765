package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/resourceslice"
)

// memChild runs a manager serving class "mem" whose cache holds the first
// f.memChild slices of namespace "mem" (selected by their bucket label), lets
// it reconcile them, and prints its settled heap and RSS as JSON.
func memChild(f flags) error {
	raw, err := os.ReadFile(f.cfgFile)
	if err != nil {
		return err
	}
	var sc savedConfig
	if err := json.Unmarshal(raw, &sc); err != nil {
		return err
	}
	cfg := &rest.Config{Host: sc.Host, TLSClientConfig: rest.TLSClientConfig{CAData: sc.CAData, CertData: sc.CertData, KeyData: sc.KeyData}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := authv1beta1.AddToScheme(scheme); err != nil {
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
		resourceslice.TrimCache(&opts.Cache)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return err
	}
	if err := resourceslice.AddToManager(mgr, "mem", acceptAll(), resourceslice.WithMaxConcurrentReconciles(2)); err != nil {
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

func rss() uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			fields := strings.Fields(line)
			kb, _ := strconv.ParseUint(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
