package gpupool_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/gpupool"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

const class = "gpu"

// newPool is the GPU pool of the package Example, on a manager never started.
func newPool(t *testing.T, opts ...budget.NodePoolOption) *budget.Budget {
	t.Helper()
	opts = append([]budget.NodePoolOption{
		budget.WithResources(gpupool.GPU, corev1.ResourceCPU, corev1.ResourceMemory),
		budget.WithConsumerLimit(corev1.ResourceList{gpupool.GPU: resource.MustParse("2")}),
	}, opts...)
	pool, err := budget.NewNodePool(envkit.UnreachableManager(t), "gpu", labels.SelectorFromSet(labels.Set{"pool": "gpu"}), opts...)
	require.NoError(t, err)
	return pool
}

// The policy alone (no budget on the harness): what it offers and where it
// pins it. Admission against the pool's nodes is envtest's (envtest_test.go).
func TestPolicy(t *testing.T) {
	pin := map[string]string{"pool": "gpu"}
	cases := map[string]struct {
		reason       string
		req          corev1.ResourceList
		wantDecision authv1beta1.ResourceSliceConditionStatus
		wantReason   string
		want         corev1.ResourceList
		wantPin      map[string]string
	}{
		"GPUs": {
			reason: "GPUs are granted as asked, pinned to the pool's nodes.",
			req:    list("nvidia.com/gpu", "1"), wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: gpupool.ReasonGranted,
			want: list("nvidia.com/gpu", "1"), wantPin: pin,
		},
		"GPUsWithCPUAndMemory": {
			reason: "cpu and memory, which the pool counts, come as asked; pods, which it does not, are dropped.",
			req:    list("nvidia.com/gpu", "2", "cpu", "8", "memory", "32Gi", "pods", "10"), wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: gpupool.ReasonGranted,
			want: list("nvidia.com/gpu", "2", "cpu", "8", "memory", "32Gi"), wantPin: pin,
		},
		"NoGPU": {
			reason: "A slice asking for no GPU is denied: the class sells GPUs.",
			req:    list("cpu", "4"), wantDecision: authv1beta1.ResourceSliceConditionDenied, wantReason: gpupool.ReasonNoGPU,
		},
		"ZeroGPU": {
			reason: "Zero GPUs is no GPU.",
			req:    list("nvidia.com/gpu", "0", "cpu", "4"), wantDecision: authv1beta1.ResourceSliceConditionDenied, wantReason: gpupool.ReasonNoGPU,
		},
	}
	policy := gpupool.New(newPool(t))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := slicetest.NewSlice("s", slicetest.WithClass(class))
			s.Spec.Resources = tc.req
			h := slicetest.New(t, class, policy, slicetest.WithObjects(s))
			res := h.Reconcile(s)
			require.NoError(t, res.Err, tc.reason)
			assert.Equal(t, tc.wantDecision, res.Decision, "%s (%s)", tc.reason, res.Message)
			assert.Equal(t, tc.wantReason, res.Reason, "%s (%s)", tc.reason, res.Message)
			if diff := cmp.Diff(tc.want, res.Resources, quantityByValue); diff != "" {
				t.Errorf("%s\noffer (-want +got):\n%s", tc.reason, diff)
			}
			assert.Equal(t, tc.wantPin, res.Slice.Status.NodeSelector, "%s: status.nodeSelector", tc.reason)
			assert.Equal(t, tc.wantPin, res.Slice.Status.NodeLabels, "%s: status.nodeLabels", tc.reason)
			h.AssertIdempotent(s)
		})
	}
}

// A pool that cannot pin, or counts no GPU, is a setup error: the slice is
// not retried and stays undecided.
func TestPolicySetupErrors(t *testing.T) {
	plain, err := budget.New("plain", list("nvidia.com/gpu", "8"))
	require.NoError(t, err)
	noGPU, err := budget.NewNodePool(envkit.UnreachableManager(t), "cpu", labels.SelectorFromSet(labels.Set{"pool": "cpu"}))
	require.NoError(t, err)
	notKeyValue, err := budget.NewNodePool(envkit.UnreachableManager(t), "gpu", labels.SelectorFromSet(nil).Add(exists(t, "gpu")),
		budget.WithResources(gpupool.GPU))
	require.NoError(t, err)
	for name, pool := range map[string]*budget.Budget{"not a node pool": plain, "no GPU counted": noGPU, "selector not key=value": notKeyValue} {
		t.Run(name, func(t *testing.T) {
			s := slicetest.NewSlice("s", slicetest.WithClass(class), slicetest.WithRequest(gpupool.GPU, "1"))
			res := slicetest.New(t, class, gpupool.New(pool), slicetest.WithObjects(s)).Reconcile(s)
			assert.True(t, errors.Is(res.Err, reconcile.TerminalError(nil)), "want a terminal error, got %v", res.Err)
			assert.Empty(t, res.Decision)
		})
	}
}

// With the pool as the class's budget, the budget admits: a pool that has
// seen no node (this manager never started) admits nothing.
func TestPoolWithoutNodesAdmitsNothing(t *testing.T) {
	pool := newPool(t)
	s := slicetest.NewSlice("s", slicetest.WithClass(class), slicetest.WithRequest(gpupool.GPU, "1"))
	h := slicetest.New(t, class, gpupool.New(pool), slicetest.WithObjects(s),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(pool)))
	res := h.Reconcile(s)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision, res.Message)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, res.Message)
}

// quantityByValue compares quantities by value: 32Gi equals 34359738368.
var quantityByValue = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// list is a ResourceList from name, quantity pairs.
func list(kv ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// exists is the selector term "key exists", which no nodeSelector expresses.
func exists(t *testing.T, key string) labels.Requirement {
	t.Helper()
	r, err := labels.NewRequirement(key, selection.Exists, nil)
	require.NoError(t, err)
	return *r
}
