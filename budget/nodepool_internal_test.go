package budget

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// quantities compares quantities by value ("1" equals "1000m").
var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// readyNode is a Ready, schedulable node with allocatable.
func readyNode(name string, allocatable corev1.ResourceList, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: allocatable,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			},
		},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func notReady(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionFalse }
func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

// pod is a running pod on node requesting requests in one container.
func pod(name, node string, requests corev1.ResourceList, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func shadow(p *corev1.Pod) { p.Labels = map[string]string{labelManagedBy: managedByShadowPod} }

// testPool is a nodePool built as NewNodePool builds it, without its cache.
func testPool(t *testing.T, names []corev1.ResourceName, share int, reserve corev1.ResourceList, localPods bool) *nodePool {
	t.Helper()
	zero := corev1.ResourceList{}
	for _, n := range names {
		zero[n] = resource.Quantity{}
	}
	l, err := ledger.New("pool", zero)
	require.NoError(t, err)
	return &nodePool{
		l: l, names: names, reserve: reserve, share: share, localPods: localPods,
		nodes: map[string]*poolNode{}, pods: map[types.NamespacedName]podUse{},
		alloc: corev1.ResourceList{}, podSum: corev1.ResourceList{},
	}
}

var cpuMemPods = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}

func TestEligible(t *testing.T) {
	now := metav1.NewTime(time.Unix(1, 0))
	cases := map[string]struct {
		reason string
		node   *corev1.Node
		want   bool
	}{
		"Ready":         {reason: "A Ready, schedulable node offers its capacity.", node: readyNode("n", nil), want: true},
		"NotReady":      {reason: "A NotReady node offers nothing.", node: readyNode("n", nil, notReady)},
		"ReadyUnknown":  {reason: "A node whose kubelet stopped reporting offers nothing.", node: readyNode("n", nil, func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionUnknown })},
		"NoReady":       {reason: "A node with no Ready condition yet offers nothing.", node: readyNode("n", nil, func(n *corev1.Node) { n.Status.Conditions = n.Status.Conditions[:1] })},
		"NoConditions":  {reason: "A node just registered offers nothing.", node: readyNode("n", nil, func(n *corev1.Node) { n.Status.Conditions = nil })},
		"Unschedulable": {reason: "A cordoned node offers nothing.", node: readyNode("n", nil, cordoned)},
		"VirtualNode": {reason: "Liqo's virtual nodes are another cluster's capacity.", node: readyNode("n", nil, func(n *corev1.Node) {
			n.Labels = map[string]string{"liqo.io/type": "virtual-node"}
		})},
		"OtherLiqoType": {reason: "Only the virtual-node type is excluded.", want: true, node: readyNode("n", nil, func(n *corev1.Node) {
			n.Labels = map[string]string{"liqo.io/type": "something-else"}
		})},
		"BeingDeleted": {reason: "A node being deleted offers nothing.", node: readyNode("n", nil, func(n *corev1.Node) { n.DeletionTimestamp = &now })},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, eligible(tc.node), tc.reason)
		})
	}
}

func TestLocal(t *testing.T) {
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		want   bool
	}{
		"Running":   {reason: "The provider's own running pod holds its requests.", pod: pod("p", "n", nil), want: true},
		"Pending":   {reason: "A pod bound to a node but not started yet holds its requests.", pod: pod("p", "n", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), want: true},
		"Unknown":   {reason: "A pod whose node stopped reporting still holds them.", pod: pod("p", "n", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), want: true},
		"Succeeded": {reason: "A finished pod holds nothing.", pod: pod("p", "n", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
		"Failed":    {reason: "A failed pod holds nothing.", pod: pod("p", "n", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
		"ShadowPod": {reason: "A pod Liqo runs for a consumer is counted by its grant.", pod: pod("p", "n", nil, shadow)},
		"OtherManagedBy": {reason: "Only shadowpod marks offloaded pods.", want: true, pod: pod("p", "n", nil, func(p *corev1.Pod) {
			p.Labels = map[string]string{labelManagedBy: "helm"}
		})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, local(tc.pod), tc.reason)
		})
	}
}

func container(requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}
}

func TestPodRequests(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   corev1.PodSpec
		want   corev1.ResourceList
	}{
		"Containers": {
			reason: "Containers' requests are summed; a pod takes one pod slot.",
			spec:   corev1.PodSpec{Containers: []corev1.Container{container(rl("cpu", "1", "memory", "1Gi")), container(rl("cpu", "500m"))}},
			want:   rl("cpu", "1500m", "memory", "1Gi", "pods", "1"),
		},
		"InitLarger": {
			reason: "An init container larger than the containers' sum sets the pod's request, per resource.",
			spec: corev1.PodSpec{
				Containers:     []corev1.Container{container(rl("cpu", "1", "memory", "1Gi")), container(rl("cpu", "1"))},
				InitContainers: []corev1.Container{container(rl("cpu", "3", "memory", "512Mi")), container(rl("memory", "2Gi"))},
			},
			want: rl("cpu", "3", "memory", "2Gi", "pods", "1"),
		},
		"InitSmaller": {
			reason: "Init containers run before the others: the larger of the two counts, not their sum.",
			spec: corev1.PodSpec{
				Containers:     []corev1.Container{container(rl("cpu", "2"))},
				InitContainers: []corev1.Container{container(rl("cpu", "1"))},
			},
			want: rl("cpu", "2", "pods", "1"),
		},
		"Overhead": {
			reason: "The pod's overhead (RuntimeClass) is added.",
			spec: corev1.PodSpec{
				Containers:     []corev1.Container{container(rl("cpu", "1"))},
				InitContainers: []corev1.Container{container(rl("cpu", "4"))},
				Overhead:       rl("cpu", "250m", "memory", "64Mi"),
			},
			want: rl("cpu", "4250m", "memory", "64Mi", "pods", "1"),
		},
		"NoRequests": {
			reason: "A best-effort pod still takes a pod slot.",
			spec:   corev1.PodSpec{Containers: []corev1.Container{container(nil)}},
			want:   rl("pods", "1"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := podRequests(&corev1.Pod{Spec: tc.spec})
			assert.Empty(t, cmp.Diff(tc.want, got, quantities), "%s\n(-want +got)", tc.reason)
		})
	}
}

// A sidecar (an init container with restartPolicy Always, GA in
// Kubernetes 1.33) runs alongside the containers for the pod's life: the
// scheduler adds its requests to theirs.
func TestPodRequestsSidecar(t *testing.T) {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{container(rl("cpu", "1"))},
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}},
		},
	}
	got := podRequests(&corev1.Pod{Spec: spec})
	assert.Empty(t, cmp.Diff(rl("cpu", "2", "pods", "1"), got, quantities), "(-want +got)")
	trimmed, err := trimPod(&corev1.Pod{Spec: spec})
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(rl("cpu", "2", "pods", "1"), podRequests(trimmed.(*corev1.Pod)), quantities), "after trimPod (-want +got)")
}

func TestTrimNode(t *testing.T) {
	now := metav1.NewTime(time.Unix(1, 0))
	fat := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "n1", UID: "u1", ResourceVersion: "42", DeletionTimestamp: &now,
			Labels:        map[string]string{"pool": "gpu", "liqo.io/type": "virtual-node"},
			Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
			Finalizers:    []string{"x"},
		},
		Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24", ProviderID: "aws://x",
			Taints: []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    rl("cpu", "8", "memory", "32Gi"),
			Allocatable: rl("cpu", "7", "memory", "30Gi", "nvidia.com/gpu", "4"),
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
			},
			Addresses:    []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}},
			Images:       []corev1.ContainerImage{{Names: []string{"registry.example/some/image:1.0"}, SizeBytes: 1 << 30}},
			NodeInfo:     corev1.NodeSystemInfo{KubeletVersion: "v1.33.0"},
			VolumesInUse: []corev1.UniqueVolumeName{"kubernetes.io/csi/x"},
		},
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", ResourceVersion: "42", DeletionTimestamp: &now,
			Labels: map[string]string{"pool": "gpu", "liqo.io/type": "virtual-node"}},
		Spec: corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Allocatable: rl("cpu", "7", "memory", "30Gi", "nvidia.com/gpu", "4"),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	got, err := trimNode(fat)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(want, got, quantities), "(-want +got)")
	assert.Equal(t, eligible(fat), eligible(got.(*corev1.Node)), "trimming keeps what eligible reads")

	other, err := trimNode("not a node")
	require.NoError(t, err)
	assert.Equal(t, "not a node", other, "another object is passed through")
}

func TestTrimPod(t *testing.T) {
	fat := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "apps", Name: "p", UID: "u", ResourceVersion: "7",
			Labels:          map[string]string{labelManagedBy: managedByShadowPod, "app": "web"},
			Annotations:     map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{Name: "rs"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1",
			Overhead: rl("cpu", "100m"),
			Containers: []corev1.Container{{Name: "web", Image: "nginx", Command: []string{"nginx"}, Env: []corev1.EnvVar{{Name: "A", Value: "B"}},
				Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("cpu", "2")}}},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: rl("memory", "1Gi")}}},
			Volumes:        []corev1.Volume{{Name: "v"}},
			Tolerations:    []corev1.Toleration{{Key: "gpu"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.1.1", ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true}}},
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p", UID: "u", ResourceVersion: "7",
			Labels: map[string]string{labelManagedBy: managedByShadowPod}},
		Spec: corev1.PodSpec{
			NodeName:       "n1",
			Overhead:       rl("cpu", "100m"),
			Containers:     []corev1.Container{{Name: "web", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}}},
			InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl("memory", "1Gi")}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	got, err := trimPod(fat)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(want, got, quantities), "(-want +got)")
	gp := got.(*corev1.Pod)
	assert.Equal(t, local(fat), local(gp), "trimming keeps what local reads")
	assert.Empty(t, cmp.Diff(podRequests(fat), podRequests(gp), quantities), "trimming keeps what podRequests reads (-want +got)")

	fat.Labels = map[string]string{"app": "web"}
	got, err = trimPod(fat)
	require.NoError(t, err)
	assert.Nil(t, got.(*corev1.Pod).Labels, "no label kept when the pod is not Liqo's")
}

// step is one event fed to a pool, and the total expected after it.
type step struct {
	what string
	do   func(p *nodePool)
	want corev1.ResourceList
}

func run(t *testing.T, p *nodePool, steps []step) {
	t.Helper()
	for i, s := range steps {
		s.do(p)
		assert.Empty(t, cmp.Diff(s.want, p.l.Total(), quantities), "step %d: %s: total (-want +got)", i, s.what)
	}
}

func addNode(n *corev1.Node) func(*nodePool) { return func(p *nodePool) { p.node(n, false) } }
func delNode(n *corev1.Node) func(*nodePool) { return func(p *nodePool) { p.node(n, true) } }
func addPod(pd *corev1.Pod) func(*nodePool)  { return func(p *nodePool) { p.pod(pd, false) } }
func delPod(pd *corev1.Pod) func(*nodePool)  { return func(p *nodePool) { p.pod(pd, true) } }
func tombstone(o any) func(*nodePool) {
	return func(p *nodePool) { p.node(toolscache.DeletedFinalStateUnknown{Obj: o}, false) }
}
func podTombstone(o any) func(*nodePool) {
	return func(p *nodePool) { p.pod(toolscache.DeletedFinalStateUnknown{Obj: o}, false) }
}
func cmr(c, m, pods string) corev1.ResourceList { return rl("cpu", c, "memory", m, "pods", pods) }

// TestPoolTotalFollowsNodes drives the pool through node events.
func TestPoolTotalFollowsNodes(t *testing.T) {
	p := testPool(t, cpuMemPods, 100, nil, false)
	n1 := readyNode("n1", cmr("4", "16Gi", "110"))
	n2 := readyNode("n2", cmr("8", "32Gi", "110"))
	run(t, p, []step{
		{"empty pool", func(*nodePool) {}, cmr("0", "0", "0")},
		{"n1 added", addNode(n1), cmr("4", "16Gi", "110")},
		{"n2 added", addNode(n2), cmr("12", "48Gi", "220")},
		{"n1 updated, same", addNode(n1.DeepCopy()), cmr("12", "48Gi", "220")},
		{"n2 cordoned", addNode(readyNode("n2", cmr("8", "32Gi", "110"), cordoned)), cmr("4", "16Gi", "110")},
		{"n2 uncordoned", addNode(n2), cmr("12", "48Gi", "220")},
		{"n1 NotReady", addNode(readyNode("n1", cmr("4", "16Gi", "110"), notReady)), cmr("8", "32Gi", "110")},
		{"n1 Ready", addNode(n1), cmr("12", "48Gi", "220")},
		{"n1 resized", addNode(readyNode("n1", cmr("6", "24Gi", "110"))), cmr("14", "56Gi", "220")},
		{"n1 becomes a virtual node", addNode(readyNode("n1", cmr("6", "24Gi", "110"), func(n *corev1.Node) {
			n.Labels = map[string]string{labelNodeType: nodeTypeVirtual}
		})), cmr("8", "32Gi", "110")},
		{"n1 back", addNode(readyNode("n1", cmr("6", "24Gi", "110"))), cmr("14", "56Gi", "220")},
		{"n2 deleted", delNode(n2), cmr("6", "24Gi", "110")},
		{"n2 deleted again", delNode(n2), cmr("6", "24Gi", "110")},
		{"n1 deleted, seen as a tombstone", tombstone(n1), cmr("0", "0", "0")},
		{"an object that is not a node", func(p *nodePool) { p.node("x", false) }, cmr("0", "0", "0")},
		{"a NotReady node added", addNode(readyNode("n3", cmr("2", "1Gi", "10"), notReady)), cmr("0", "0", "0")},
		{"it becomes Ready", addNode(readyNode("n3", cmr("2", "1Gi", "10"))), cmr("2", "1Gi", "10")},
	})
}

func TestPoolTotalArithmetic(t *testing.T) {
	cases := map[string]struct {
		reason  string
		names   []corev1.ResourceName
		share   int
		reserve corev1.ResourceList
		nodes   []*corev1.Node
		want    corev1.ResourceList
	}{
		"Share": {
			reason: "50% of the pool, rounded down to the milli.",
			names:  cpuMemPods, share: 50,
			nodes: []*corev1.Node{readyNode("n1", cmr("3", "1Gi", "11")), readyNode("n2", cmr("4", "1Gi", "110"))},
			want:  cmr("3500m", "1Gi", "60500m"),
		},
		"ShareRoundsDown": {
			reason: "A third of 1m is less than 1m: 0, never rounded up.",
			names:  []corev1.ResourceName{corev1.ResourceCPU}, share: 33,
			nodes: []*corev1.Node{readyNode("n1", rl("cpu", "1m"))},
			want:  rl("cpu", "0"),
		},
		"ShareThenReserve": {
			reason: "The reserve is taken after the share: 10×50% − 2.",
			names:  []corev1.ResourceName{corev1.ResourceCPU}, share: 50, reserve: rl("cpu", "2"),
			nodes: []*corev1.Node{readyNode("n1", rl("cpu", "10"))},
			want:  rl("cpu", "3"),
		},
		"ReserveLargerThanPool": {
			reason: "A reserve larger than the pool leaves 0, never negative.",
			names:  cpuMemPods, reserve: rl("cpu", "100", "memory", "1Gi"),
			nodes: []*corev1.Node{readyNode("n1", cmr("4", "16Gi", "110"))},
			want:  cmr("0", "15Gi", "110"),
		},
		"ReserveOfAResourceNotLimited": {
			reason: "A reserve of a resource the pool does not limit is ignored.",
			names:  []corev1.ResourceName{corev1.ResourceCPU}, reserve: rl("memory", "1Gi"),
			nodes: []*corev1.Node{readyNode("n1", cmr("4", "16Gi", "110"))},
			want:  rl("cpu", "4"),
		},
		"ResourceNoNodeHas": {
			reason: "A GPU pool whose nodes report no GPU offers 0 GPUs, never unlimited; with a share and a reserve too.",
			names:  []corev1.ResourceName{"nvidia.com/gpu", corev1.ResourceCPU}, share: 50, reserve: rl("nvidia.com/gpu", "1"),
			nodes: []*corev1.Node{readyNode("n1", cmr("4", "16Gi", "110"))},
			want:  rl("nvidia.com/gpu", "0", "cpu", "2"),
		},
		"NoNodes": {
			reason: "An empty pool offers 0 of each resource.",
			names:  cpuMemPods, share: 50,
			want: cmr("0", "0", "0"),
		},
		"LargeMemoryShare": {
			reason: "5000 nodes × 1Ti at 50%: in milli-units times the percentage, 5000Ti overflows int64; the total is exact.",
			names:  []corev1.ResourceName{corev1.ResourceMemory}, share: 50,
			nodes: func() []*corev1.Node {
				var out []*corev1.Node
				for i := range 5000 {
					out = append(out, readyNode(fmt.Sprintf("n%04d", i), rl("memory", "1Ti")))
				}
				return out
			}(),
			want: rl("memory", "2500Ti"),
		},
		"HugeNodeShare": {
			reason: "One node with 7Ei of memory (near int64's limit) at 30%.",
			names:  []corev1.ResourceName{corev1.ResourceMemory}, share: 30,
			nodes: []*corev1.Node{readyNode("n1", rl("memory", "7Ei"))},
			want:  rl("memory", "2421135159674378649600m"),
		},
		"SumPastInt64": {
			reason: "Two 7Ei nodes sum past int64 (14Ei); at 50% the total is 7Ei, exact.",
			names:  []corev1.ResourceName{corev1.ResourceMemory}, share: 50,
			nodes: []*corev1.Node{readyNode("n1", rl("memory", "7Ei")), readyNode("n2", rl("memory", "7Ei"))},
			want:  rl("memory", "7Ei"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			share := tc.share
			if share == 0 {
				share = 100
			}
			p := testPool(t, tc.names, share, tc.reserve, false)
			for _, n := range tc.nodes {
				p.node(n, false)
			}
			assert.Empty(t, cmp.Diff(tc.want, p.l.Total(), quantities), "%s\ntotal (-want +got)", tc.reason)
		})
	}
}

// TestPoolTotalLocalPods drives a pool with WithLocalPods through node and
// pod events.
func TestPoolTotalLocalPods(t *testing.T) {
	p := testPool(t, cpuMemPods, 100, rl("cpu", "1"), true)
	n1 := readyNode("n1", cmr("8", "16Gi", "110"))
	web := pod("web", "n1", rl("cpu", "2", "memory", "4Gi"))
	early := pod("early", "n2", rl("cpu", "1"))
	run(t, p, []step{
		{"n1 added (8 − reserve 1)", addNode(n1), cmr("7", "16Gi", "110")},
		{"the provider's own pod on n1", addPod(web), cmr("5", "12Gi", "109")},
		{"the same pod updated", addPod(web.DeepCopy()), cmr("5", "12Gi", "109")},
		{"a pod Liqo offloaded for a consumer is not subtracted", addPod(pod("offloaded", "n1", rl("cpu", "3"), shadow)), cmr("5", "12Gi", "109")},
		{"a finished pod holds nothing", addPod(pod("job", "n1", rl("cpu", "1"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })), cmr("5", "12Gi", "109")},
		{"a pod on a node not seen yet counts once its node is", addPod(early), cmr("5", "12Gi", "109")},
		{"its node n2 arrives", addNode(readyNode("n2", cmr("4", "8Gi", "110"))), cmr("8", "20Gi", "218")},
		{"n2 cordoned: neither it nor its pods count", addNode(readyNode("n2", cmr("4", "8Gi", "110"), cordoned)), cmr("5", "12Gi", "109")},
		{"a pod on cordoned n2", addPod(pod("late", "n2", rl("cpu", "1"))), cmr("5", "12Gi", "109")},
		{"n2 uncordoned: both its pods count", addNode(readyNode("n2", cmr("4", "8Gi", "110"))), cmr("7", "20Gi", "217")},
		{"web grows (a resize)", addPod(pod("web", "n1", rl("cpu", "3", "memory", "4Gi"))), cmr("6", "20Gi", "217")},
		{"web succeeds", addPod(pod("web", "n1", rl("cpu", "3", "memory", "4Gi"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })), cmr("9", "24Gi", "218")},
		{"late deleted, seen as a tombstone", podTombstone(pod("late", "n2", rl("cpu", "1"))), cmr("10", "24Gi", "219")},
		{"early deleted", delPod(early), cmr("11", "24Gi", "220")},
		{"a pod deleted that was never counted", delPod(pod("ghost", "n1", rl("cpu", "1"))), cmr("11", "24Gi", "220")},
		{"pods fill n1 past its allocatable", addPod(pod("big", "n1", rl("cpu", "20"))), cmr("0", "24Gi", "219")},
	})
}

// A node deleted and created again under the same name (a node that
// re-registers) while pods of the provider ran on it: the pods' requests
// must neither be forgotten nor subtracted twice.
func TestPoolNodeRecreatedWithPods(t *testing.T) {
	n1 := readyNode("n1", rl("cpu", "8"))
	web := pod("web", "n1", rl("cpu", "2"))
	t.Run("PodDeletedWhileNodeGone", func(t *testing.T) {
		p := testPool(t, []corev1.ResourceName{corev1.ResourceCPU}, 100, nil, true)
		run(t, p, []step{
			{"n1 added", addNode(n1), rl("cpu", "8")},
			{"web on n1", addPod(web), rl("cpu", "6")},
			{"n1 deleted", delNode(n1), rl("cpu", "0")},
			{"web deleted", delPod(web), rl("cpu", "0")},
			{"n1 added again", addNode(n1), rl("cpu", "8")},
		})
	})
	t.Run("PodOutlivesNode", func(t *testing.T) {
		p := testPool(t, []corev1.ResourceName{corev1.ResourceCPU}, 100, nil, true)
		run(t, p, []step{
			{"n1 added", addNode(n1), rl("cpu", "8")},
			{"web on n1", addPod(web), rl("cpu", "6")},
			{"n1 deleted", delNode(n1), rl("cpu", "0")},
			{"n1 added again, web still there", addNode(n1), rl("cpu", "6")},
			{"web deleted", delPod(web), rl("cpu", "8")},
		})
	})
}

// Node and pod events arrive on two informers' goroutines at once: once
// both are handled, the ledger's total is the pool's, whatever the
// interleaving.
func TestPoolTotalConcurrentNodeAndPodEvents(t *testing.T) {
	for round := range 2000 {
		p := testPool(t, []corev1.ResourceName{corev1.ResourceCPU}, 100, nil, true)
		p.node(readyNode("n1", rl("cpu", "8")), false)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); p.node(readyNode("n1", rl("cpu", "16")), false) }()
		go func() { defer wg.Done(); p.pod(pod("web", "n1", rl("cpu", "2")), false) }()
		wg.Wait()
		if !assert.Empty(t, cmp.Diff(rl("cpu", "14"), p.l.Total(), quantities), "round %d: total (-want +got)", round) {
			return
		}
	}
}
