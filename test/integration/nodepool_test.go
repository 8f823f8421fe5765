package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// These tests create Nodes (and Pods) through the API server with the
// status a kubelet would report: envtest runs no kubelet, scheduler or
// node controller, so nothing changes them behind the test's back. Nodes
// are cluster-wide: every test labels its nodes with a key of its own
// (poolTestLabel) so that its pools see only them, and deletes them when it
// ends.

const (
	resourceGPU   corev1.ResourceName = "nvidia.com/gpu"
	resourceFPGA  corev1.ResourceName = "example.com/fpga"
	poolTestLabel                     = "sliceclass.test/pool-test"
)

// poolNodeLabels are the labels of a node of pool ("gpu", "cpu") for the
// test id.
func poolNodeLabels(id, pool string) map[string]string {
	return map[string]string{"pool": pool, poolTestLabel: id}
}

// addNode creates a node with labels, then reports its allocatable (cpu and
// GPUs) and a Ready condition in its status, as a kubelet would.
func addNode(t *testing.T, name string, lbls map[string]string, cpu, gpu string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	require.NoError(t, cp.Client.Create(ctx, n))
	t.Cleanup(func() {
		if err := cp.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
	n.Status = corev1.NodeStatus{
		Capacity:    nodeResources(cpu, gpu),
		Allocatable: nodeResources(cpu, gpu),
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	require.NoError(t, cp.Client.Status().Update(ctx, n))
}

func nodeResources(cpu, gpu string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		resourceGPU:           resource.MustParse(gpu),
	}
}

// changeNode applies change to the node (its spec when status is false,
// its status otherwise), retrying on conflicts.
func changeNode(t *testing.T, name string, status bool, change func(*corev1.Node)) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return err
		}
		change(&n)
		if status {
			return cp.Client.Status().Update(ctx, &n)
		}
		return cp.Client.Update(ctx, &n)
	}))
}

func setReady(ready corev1.ConditionStatus) func(*corev1.Node) {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status = ready
				n.Status.Conditions[i].LastTransitionTime = metav1.Now()
			}
		}
	}
}

// units are whole amounts per resource, for expected totals.
type units map[corev1.ResourceName]int64

func (u units) String() string {
	var parts []string
	for n, v := range u {
		parts = append(parts, fmt.Sprintf("%s=%d", n, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// totalIs reports whether b's total names exactly the resources of want,
// with those amounts.
func totalIs(b *budget.Budget, want units) bool {
	got := b.Total()
	if len(got) != len(want) {
		return false
	}
	for n, v := range want {
		q, ok := got[n]
		if !ok || q.Cmp(*resource.NewQuantity(v, resource.DecimalSI)) != 0 {
			return false
		}
	}
	return true
}

func showTotal(b *budget.Budget) string {
	var parts []string
	for n, q := range b.Total() {
		parts = append(parts, fmt.Sprintf("%s=%s", n, q.String()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// latencyProbe times node changes until a pool's total shows them.
type latencyProbe struct {
	samples []time.Duration
}

// measure runs change and polls b's total tightly until it is want,
// failing the test after testwait.Timeout, and records and logs the latency
// from the start of the API write. The latency is reported, not asserted: a
// loaded machine makes any bound flaky (BenchmarkNodePool measures it).
func (p *latencyProbe) measure(t *testing.T, what string, b *budget.Budget, want units, change func()) {
	t.Helper()
	start := time.Now()
	change()
	deadline := start.Add(testwait.Timeout)
	for !totalIs(b, want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the pool total is %s after %s, want %s", what, showTotal(b), testwait.Timeout, want)
		}
		time.Sleep(200 * time.Microsecond)
	}
	d := time.Since(start)
	p.samples = append(p.samples, d)
	t.Logf("%s: total %s after %s", what, want, d.Round(10*time.Microsecond))
}

func (p *latencyProbe) log(t *testing.T) {
	t.Helper()
	s := append([]time.Duration(nil), p.samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return
	}
	t.Logf("node change → new total: %d changes, p50 %s, max %s (from the start of the API write)",
		len(s), s[len(s)/2].Round(10*time.Microsecond), s[len(s)-1].Round(10*time.Microsecond))
}

// modelNode is what the test believes a node offers.
type modelNode struct {
	cpu, gpu int64
	eligible bool
}

// poolModel is what the test believes the pool's nodes offer.
type poolModel map[string]modelNode

// expect is the total of the model's eligible nodes, times share percent,
// minus reserve, never below zero, for the named resources (a resource no
// node has is 0).
func (m poolModel) expect(share int64, reserve units, names ...corev1.ResourceName) units {
	var cpu, gpu int64
	for _, n := range m {
		if n.eligible {
			cpu += n.cpu
			gpu += n.gpu
		}
	}
	out := units{}
	for _, n := range names {
		var v int64
		switch n {
		case corev1.ResourceCPU:
			v = cpu
		case resourceGPU:
			v = gpu
		}
		v = v*share/100 - reserve[n]
		out[n] = max(v, 0)
	}
	return out
}

// The pool total follows its nodes added, cordoned, made NotReady, resized
// and deleted within a second, and ignores nodes outside the selector and
// Liqo's virtual nodes; share and reserve scale it, never below zero; a
// smaller total revokes nothing: a slice Accepted on 4 GPUs keeps its offer
// (no write to it) when the pool shrinks to 2, while a new slice waits.
func TestNodePoolTotalFollowsNodes(t *testing.T) {
	cp.Require(t)
	id := "np-follow"
	ns := testkit.Namespace(t, cp, id)
	class := id
	selector := labels.SelectorFromSet(poolNodeLabels(id, "gpu"))
	var full, half, reserved *budget.Budget
	pin := func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		if err := full.PinToNodePool(rs); err != nil {
			return ctrl.Result{}, err
		}
		conditions.Accept(rs, "Granted", "granted on the GPU pool")
		return ctrl.Result{}, nil
	}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		if full, err = budget.NewNodePool(mgr, id+"-full", selector, budget.WithResources(corev1.ResourceCPU, resourceGPU)); err != nil {
			return err
		}
		if half, err = budget.NewNodePool(mgr, id+"-half", selector, budget.WithResources(corev1.ResourceCPU, resourceGPU),
			budget.WithSharePercent(50), budget.WithReserve(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})); err != nil {
			return err
		}
		if reserved, err = budget.NewNodePool(mgr, id+"-reserved", selector, budget.WithResources(corev1.ResourceCPU, resourceGPU, resourceFPGA),
			budget.WithReserve(corev1.ResourceList{resourceGPU: resource.MustParse("5")})); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, class, handler.Func(pin), resourceslice.WithBudget(full))
	})

	model := poolModel{}
	var probe latencyProbe
	names := []corev1.ResourceName{corev1.ResourceCPU, resourceGPU}
	// check measures the full pool's latency and checks the others follow.
	check := func(what string, change func()) {
		t.Helper()
		probe.measure(t, what, full, model.expect(100, nil, names...), change)
		wantHalf := model.expect(50, units{corev1.ResourceCPU: 2}, names...)
		testkit.Eventually(t, what+": the 50% pool with 2 CPU reserved is "+wantHalf.String(), func() bool { return totalIs(half, wantHalf) })
		wantReserved := model.expect(100, units{resourceGPU: 5}, corev1.ResourceCPU, resourceGPU, resourceFPGA)
		testkit.Eventually(t, what+": the pool with 5 GPUs reserved is "+wantReserved.String(), func() bool { return totalIs(reserved, wantReserved) })
	}

	require.True(t, totalIs(full, units{corev1.ResourceCPU: 0, resourceGPU: 0}), "an empty pool is 0, got %s", showTotal(full))
	n1, n2 := id+"-gpu-1", id+"-gpu-2"
	model[n1] = modelNode{cpu: 8, gpu: 2, eligible: true}
	check("add "+n1+" (8 CPU, 2 GPUs)", func() { addNode(t, n1, poolNodeLabels(id, "gpu"), "8", "2") })
	model[n2] = modelNode{cpu: 8, gpu: 2, eligible: true}
	check("add "+n2+" (8 CPU, 2 GPUs)", func() { addNode(t, n2, poolNodeLabels(id, "gpu"), "8", "2") })

	// A slice takes 3 of the 4 GPUs, pinned to the pool.
	create(t, slicetest.NewSlice("held", slicetest.WithNamespace(ns), slicetest.WithClass(class), slicetest.WithRequest(resourceGPU, "3")))
	testkit.Eventually(t, "held Accepted on 4 GPUs", decision(ns, "held", "Accepted/Granted"))
	held := get(t, ns, "held")
	assert.Equal(t, map[string]string{"pool": "gpu", poolTestLabel: id}, held.Status.NodeSelector, "PinToNodePool sets the pool's selector")
	assert.Equal(t, map[string]string{"pool": "gpu", poolTestLabel: id}, held.Status.NodeLabels, "PinToNodePool sets the pool's labels")
	rvHeld := held.ResourceVersion

	setCordon := func(on bool) func(*corev1.Node) { return func(n *corev1.Node) { n.Spec.Unschedulable = on } }
	m := model[n2]
	m.eligible = false
	model[n2] = m
	check("cordon "+n2, func() { changeNode(t, n2, false, setCordon(true)) })

	// Never revokes: held keeps its 3 GPUs on a pool of 2; a new slice waits.
	create(t, slicetest.NewSlice("late", slicetest.WithNamespace(ns), slicetest.WithClass(class), slicetest.WithRequest(resourceGPU, "1")))
	testkit.Eventually(t, "late denied: the pool shrank to 2 GPUs, 3 are held", decision(ns, "late", "Denied/"+budget.ReasonExhausted))
	c := conditions.Get(get(t, ns, "late"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Contains(t, c.Message, "budget "+id+"-full: nvidia.com/gpu: asked 1", "the denial names the budget and the short resource")
	testkit.Consistently(t, time.Second, "held stays Accepted, unwritten, on a pool of 2 GPUs", func() bool {
		rs := get(t, ns, "held")
		return conditions.IsAccepted(rs) && rs.ResourceVersion == rvHeld
	})
	used := full.Used()[resourceGPU]
	assert.Zero(t, used.Cmp(resource.MustParse("3")), "the pool still counts held's 3 GPUs, Used %s", used.String())

	m.eligible = true
	model[n2] = m
	check("uncordon "+n2, func() { changeNode(t, n2, false, setCordon(false)) })
	testkit.Eventually(t, "late admitted once the pool is back to 4 GPUs (1 free)", decision(ns, "late", "Accepted/Granted"))

	m = model[n1]
	m.eligible = false
	model[n1] = m
	check("make "+n1+" NotReady", func() { changeNode(t, n1, true, setReady(corev1.ConditionFalse)) })
	m.eligible = true
	model[n1] = m
	check("make "+n1+" Ready again", func() { changeNode(t, n1, true, setReady(corev1.ConditionTrue)) })

	m = model[n2]
	m.cpu, m.gpu = 16, 4
	model[n2] = m
	check("resize "+n2+" to 16 CPU, 4 GPUs", func() {
		changeNode(t, n2, true, func(n *corev1.Node) { n.Status.Allocatable = nodeResources("16", "4") })
	})

	delete(model, n1)
	check("delete "+n1, func() {
		require.NoError(t, cp.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n1}}))
	})

	// Nodes the pool must not count: outside the selector, and Liqo's
	// virtual nodes (which show the consumer's resources on this cluster).
	want := model.expect(100, nil, names...)
	addNode(t, id+"-cpu-1", poolNodeLabels(id, "cpu"), "64", "8")
	virtual := poolNodeLabels(id, "gpu")
	virtual["liqo.io/type"] = "virtual-node"
	addNode(t, id+"-virtual", virtual, "100", "8")
	testkit.Consistently(t, 1500*time.Millisecond, "the pool total unchanged by a node outside the selector and a virtual node", func() bool {
		return totalIs(full, want)
	})
	wantHalf := model.expect(50, units{corev1.ResourceCPU: 2}, names...)
	assert.True(t, totalIs(half, wantHalf), "the 50%% pool: got %s, want %s", showTotal(half), wantHalf)
	probe.log(t)
	t.Logf("final totals: full %s, half %s, reserved %s", showTotal(full), showTotal(half), showTotal(reserved))
}

// addPod creates a pod bound to node (envtest has no scheduler: the test
// sets spec.nodeName) requesting cpu and gpu, with lbls, then sets its
// phase.
func addPod(t *testing.T, ns, name, node string, lbls map[string]string, cpu, gpu string, phase corev1.PodPhase) {
	t.Helper()
	ctx := context.Background()
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	lim := corev1.ResourceList{}
	if gpu != "" {
		req[resourceGPU] = resource.MustParse(gpu)
		lim[resourceGPU] = resource.MustParse(gpu)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: lim},
			}},
		},
	}
	require.NoError(t, cp.Client.Create(ctx, pod))
	pod.Status.Phase = phase
	require.NoError(t, cp.Client.Status().Update(ctx, pod))
}

// With WithLocalPods the pool also subtracts the requests of the
// provider's own pods on its nodes; pods Liqo runs for a consumer
// (liqo.io/managed-by=shadowpod) and finished pods are not subtracted, and
// deleting a pod gives its requests back.
func TestNodePoolLocalPods(t *testing.T) {
	cp.Require(t)
	id := "np-pods"
	ns := testkit.Namespace(t, cp, id)
	selector := labels.SelectorFromSet(poolNodeLabels(id, "gpu"))
	var pool *budget.Budget
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		pool, err = budget.NewNodePool(mgr, id, selector, budget.WithResources(corev1.ResourceCPU, resourceGPU), budget.WithLocalPods())
		return err
	})
	var probe latencyProbe
	node := id + "-gpu-1"
	probe.measure(t, "add "+node+" (8 CPU, 2 GPUs)", pool, units{corev1.ResourceCPU: 8, resourceGPU: 2}, func() {
		addNode(t, node, poolNodeLabels(id, "gpu"), "8", "2")
	})
	probe.measure(t, "a provider's pod (2 CPU, 1 GPU) Running on "+node, pool, units{corev1.ResourceCPU: 6, resourceGPU: 1}, func() {
		addPod(t, ns, "own", node, nil, "2", "1", corev1.PodRunning)
	})
	addPod(t, ns, "offloaded", node, map[string]string{"liqo.io/managed-by": "shadowpod"}, "3", "1", corev1.PodRunning)
	testkit.Consistently(t, time.Second, "a pod Liqo offloaded (shadowpod) is not subtracted", func() bool {
		return totalIs(pool, units{corev1.ResourceCPU: 6, resourceGPU: 1})
	})
	addPod(t, ns, "finished", node, nil, "1", "", corev1.PodSucceeded)
	testkit.Eventually(t, "a finished pod holds nothing", func() bool {
		return totalIs(pool, units{corev1.ResourceCPU: 6, resourceGPU: 1})
	})
	testkit.Consistently(t, 500*time.Millisecond, "a finished pod holds nothing", func() bool {
		return totalIs(pool, units{corev1.ResourceCPU: 6, resourceGPU: 1})
	})
	probe.measure(t, "delete the provider's pod", pool, units{corev1.ResourceCPU: 8, resourceGPU: 2}, func() {
		require.NoError(t, cp.Client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"}},
			client.GracePeriodSeconds(0)))
	})
	probe.log(t)
}
