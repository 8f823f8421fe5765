package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// BenchmarkNodePool measures a node-pool budget on a real API server
// (issue 17): the client heap per node of the pool's trimmed cache, against
// a plain controller-runtime cache of the same nodes, and per pod with
// WithLocalPods; then the time from a node's change (its allocatable) to
// the pool's new total, p50 and p99 over b.N changes.
//
//	KUBEBUILDER_ASSETS=... go test -run '^$' -bench NodePool -benchtime 50x ./test/integration/
//
// SLICECLASS_BENCH_NODES (default 5000) and SLICECLASS_BENCH_PODS (default
// 2000) set the sizes.
func BenchmarkNodePool(b *testing.B) {
	cp.Require(b)
	ctx := context.Background()
	nodes, pods := envInt(b, "SLICECLASS_BENCH_NODES", 5000), envInt(b, "SLICECLASS_BENCH_PODS", 2000)
	id := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	sel := labels.SelectorFromSet(labels.Set{"bench-pool": id})
	ns := "bench-pool-" + id
	require.NoError(b, cp.CreateNamespace(ctx, ns))

	start := time.Now()
	parallel(b, nodes, func(i int) error { return createFatNode(ctx, fmt.Sprintf("bench-%s-%05d", id, i), id) })
	parallel(b, pods, func(i int) error {
		return cp.Client.Create(ctx, benchPod(ns, fmt.Sprintf("p-%05d", i), fmt.Sprintf("bench-%s-%05d", id, i%nodes)))
	})
	b.Logf("created %d nodes and %d pods in %s", nodes, pods, time.Since(start).Round(time.Millisecond))

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// run starts a manager with register's runnables, waits until ready
	// says so, and returns the heap it added and a stop function.
	run := func(register func(manager.Manager) (ready func() bool, err error)) (uint64, func()) {
		before := heap()
		mgr, err := manager.New(cp.Config, testkit.ManagerOptions(b, cp.Scheme))
		require.NoError(b, err)
		ready, err := register(mgr)
		require.NoError(b, err)
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		// Thousands of nodes and pods to list: bulk work.
		require.NoError(b, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 3*testwait.Timeout, true,
			func(context.Context) (bool, error) { return ready(), nil }))
		after := heap()
		return after - min(after, before), func() {
			cancel()
			if err := <-done; err != nil {
				b.Errorf("manager: %v", err)
			}
		}
	}
	cpuOf := func(p *budget.Budget) int64 { q := p.Total()[corev1.ResourceCPU]; return q.Value() }
	allocatable := int64(nodes) * 8

	// A plain cache of the same nodes, untrimmed: what a handler listing
	// nodes itself keeps.
	var plain cache.Cache
	plainHeap, stopPlain := run(func(mgr manager.Manager) (func() bool, error) {
		c, err := cache.New(cp.Config, cache.Options{Scheme: cp.Scheme, ByObject: map[client.Object]cache.ByObject{&corev1.Node{}: {Label: sel}}})
		if err != nil {
			return nil, err
		}
		plain = c
		if _, err := c.GetInformer(ctx, &corev1.Node{}); err != nil {
			return nil, err
		}
		return func() bool { return c.WaitForCacheSync(ctx) }, mgr.Add(c)
	})
	var list corev1.NodeList
	require.NoError(b, plain.List(ctx, &list))
	require.Len(b, list.Items, nodes)
	stopPlain()

	var pool *budget.Budget
	poolHeap, stopPool := run(func(mgr manager.Manager) (func() bool, error) {
		var err error
		pool, err = budget.NewNodePool(mgr, "bench-"+id, sel)
		return func() bool { return cpuOf(pool) == allocatable }, err
	})
	var withPods *budget.Budget
	podsHeap, stopPods := run(func(mgr manager.Manager) (func() bool, error) {
		var err error
		withPods, err = budget.NewNodePool(mgr, "bench-pods-"+id, sel, budget.WithLocalPods())
		// every pod requests 1 CPU
		return func() bool { return cpuOf(withPods) == allocatable-int64(pods) }, err
	})
	stopPods()
	b.ReportMetric(float64(plainHeap)/float64(nodes), "plain-cache-B/node")
	b.ReportMetric(float64(poolHeap)/float64(nodes), "pool-B/node")
	b.ReportMetric((float64(podsHeap)-float64(poolHeap))/float64(pods), "pool-B/pod")
	b.Logf("heap: plain node cache %d B/node, pool %d B/node (%.2f of plain), pool with local pods +%d B/pod",
		plainHeap/uint64(nodes), poolHeap/uint64(nodes), float64(poolHeap)/float64(plainHeap), (podsHeap-min(podsHeap, poolHeap))/uint64(pods))

	// Node change → new total.
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		var n corev1.Node
		require.NoError(b, cp.Client.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("bench-%s-%05d", id, i%nodes)}, &n))
		c := n.Status.Allocatable[corev1.ResourceCPU]
		c.Add(resource.MustParse("1"))
		n.Status.Allocatable[corev1.ResourceCPU] = c
		want := cpuOf(pool) + 1
		t0 := time.Now()
		require.NoError(b, cp.Client.Status().Update(ctx, &n))
		for cpuOf(pool) != want {
			if time.Since(t0) > testwait.Timeout {
				b.Fatalf("the pool's total did not follow node %s within %s", n.Name, testwait.Timeout)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	stopPool()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	b.ReportMetric(float64(p50.Microseconds())/1000, "change-to-total-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "change-to-total-p99-ms")
	b.Logf("node change → new total over %d changes (%d nodes): p50 %s, p99 %s", len(lat), nodes, p50, p99)
}

func envInt(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, name)
		return n
	}
	return def
}

// parallel runs f for 0..n-1 on 16 goroutines.
func parallel(b *testing.B, n int, f func(int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
}

// createFatNode creates a Ready node of 8 CPU with the status a kubelet
// reports: 40 images, addresses, node info.
func createFatNode(ctx context.Context, name, pool string) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"bench-pool": pool, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"node.kubernetes.io/instance-type": "m5.2xlarge", "topology.kubernetes.io/zone": "zone-a"}}}
	if err := cp.Client.Create(ctx, n); err != nil {
		return err
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	n.Status = corev1.NodeStatus{
		Capacity: rl, Allocatable: rl,
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
		NodeInfo: corev1.NodeSystemInfo{MachineID: "0123456789abcdef", SystemUUID: "ec2-uuid", BootID: "boot-id", KernelVersion: "6.1.0",
			OSImage: "Debian GNU/Linux 12", ContainerRuntimeVersion: "containerd://1.7.0", KubeletVersion: "v1.35.3", OperatingSystem: "linux", Architecture: "amd64"},
	}
	for i := range 40 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("registry.example/team/app-%02d@sha256:%064d", i, i), fmt.Sprintf("registry.example/team/app-%02d:v1.%d", i, i)},
			SizeBytes: int64(100_000_000 + i),
		})
	}
	return cp.Client.Status().Update(ctx, n)
}

// benchPod is a running pod on node requesting 1 CPU.
func benchPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
}
