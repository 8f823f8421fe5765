package gpupool_test

import (
	"context"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/gpupool"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// On a real API server, with the pool sized from two GPU Nodes created
// through the API: a consumer's 3 slices of 1 GPU, decided by 4 workers
// from a cold cache, against a limit of 2 per consumer, give exactly 2
// Accepted slices pinned to the pool and 1 ConsumerLimitReached, though the
// pool has 4 GPUs.
func TestConsumerLimitOnANodePool(t *testing.T) {
	cp.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancel()
	const ns = slicetest.DefaultNamespace
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	for _, name := range []string{"gpu-a", "gpu-b"} {
		_, err := envkit.CreateNode(ctx, cp.Client, name, nodeResources("2"), envkit.WithNodeLabels(map[string]string{"pool": "gpu"}))
		require.NoError(t, err)
	}
	_, err := envkit.CreateNode(ctx, cp.Client, "cpu-only", nodeResources("0"), envkit.WithNodeLabels(map[string]string{"pool": "cpu"}))
	require.NoError(t, err, "a node outside the pool")
	var names []string
	for i := range 3 {
		s := slicetest.NewSlice(fmt.Sprintf("train-%d", i), slicetest.WithClass(class), slicetest.WithRequest(gpupool.GPU, "1"))
		require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, s))
		names = append(names, s.Name)
	}

	var pool *budget.Budget
	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		pool, err = budget.NewNodePool(mgr, "gpu", labels.SelectorFromSet(labels.Set{"pool": "gpu"}),
			budget.WithResources(gpupool.GPU, corev1.ResourceCPU, corev1.ResourceMemory),
			budget.WithConsumerLimit(corev1.ResourceList{gpupool.GPU: resource.MustParse("2")}))
		if err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, class, gpupool.New(pool),
			resourceslice.WithBudget(pool), resourceslice.WithMaxConcurrentReconciles(4))
	})

	decided := map[string]*authv1beta1.ResourceSlice{}
	envkit.Eventually(t, "the 3 slices decided", func() bool {
		for _, n := range names {
			var rs authv1beta1.ResourceSlice
			require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &rs))
			if !conditions.IsDecided(&rs) {
				return false
			}
			decided[n] = &rs
		}
		return true
	})
	gpus := pool.Total()[gpupool.GPU]
	assert.Equal(t, int64(4), gpus.Value(), "the pool is the 2 GPU nodes' 4 GPUs")

	var accepted, limited int
	for n, rs := range decided {
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		switch {
		case conditions.IsAccepted(rs):
			accepted++
			assert.Equal(t, map[string]string{"pool": "gpu"}, rs.Status.NodeSelector, "%s pinned to the pool", n)
			assert.Equal(t, map[string]string{"pool": "gpu"}, rs.Status.NodeLabels, "%s shows the pool's labels", n)
			assert.Equal(t, gpupool.ReasonGranted, c.Reason)
		case c.Reason == budget.ReasonConsumerLimit:
			limited++
			assert.Contains(t, c.Message, ns, "the message names the consumer")
		default:
			t.Errorf("%s: unexpected %s %s: %s", n, c.Status, c.Reason, c.Message)
		}
	}
	assert.Equal(t, 2, accepted, "exactly the consumer's limit is granted")
	assert.Equal(t, 1, limited, "the third slice waits at the consumer's limit")
}

// nodeResources is the allocatable of a node with gpus GPUs, 32 CPUs and
// 128Gi.
func nodeResources(gpus string) corev1.ResourceList {
	return corev1.ResourceList{
		gpupool.GPU: resource.MustParse(gpus), corev1.ResourceCPU: resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
}
