package envkit_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/testing/envkit"
)

// A node as CreateNode leaves it on the API server: its status written
// (which a create alone drops), Ready, with the labels and allocatable
// given; the options make it not Ready or cordoned.
func TestCreateNode(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("2")}
	_, err := envkit.CreateNode(ctx, cp.Client, "envkit-ready", alloc, envkit.WithNodeLabels(map[string]string{"pool": "gpu"}))
	require.NoError(t, err)

	var n corev1.Node
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: "envkit-ready"}, &n))
	assert.Equal(t, "gpu", n.Labels["pool"])
	assert.True(t, n.Status.Allocatable.Cpu().Equal(resource.MustParse("8")), "allocatable as stored: %v", n.Status.Allocatable)
	gpus := n.Status.Allocatable["nvidia.com/gpu"]
	assert.Equal(t, int64(2), gpus.Value())
	assert.Equal(t, corev1.ConditionTrue, readyStatus(&n))
	assert.False(t, n.Spec.Unschedulable)

	_, err = envkit.CreateNode(ctx, cp.Client, "envkit-down", alloc, envkit.NotReady(), envkit.Unschedulable())
	require.NoError(t, err)
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: "envkit-down"}, &n))
	assert.Equal(t, corev1.ConditionFalse, readyStatus(&n))
	assert.True(t, n.Spec.Unschedulable)

	_, err = envkit.CreateNode(ctx, cp.Client, "envkit-ready", alloc)
	require.Error(t, err, "a node that exists")
	assert.Contains(t, err.Error(), "creating node envkit-ready")
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// CreateConsumer makes the tenant namespace, labelled with the consumer,
// and an Active Tenant; SetTenantCondition drains it. An existing namespace
// is labelled rather than refused.
func TestCreateConsumer(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns, err := envkit.CreateConsumer(ctx, cp.Client, "envkit-alice")
	require.NoError(t, err)
	assert.Equal(t, "liqo-tenant-envkit-alice", ns)

	var got corev1.Namespace
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: ns}, &got))
	assert.Equal(t, "envkit-alice", got.Labels["liqo.io/remote-cluster-id"])
	assert.Equal(t, "true", got.Labels["liqo.io/tenant-namespace"])

	key := client.ObjectKey{Namespace: ns, Name: "envkit-alice"}
	var tenant authv1beta1.Tenant
	require.NoError(t, cp.Client.Get(ctx, key, &tenant))
	assert.Equal(t, authv1beta1.TenantConditionActive, tenant.Spec.TenantCondition)
	assert.Equal(t, "envkit-alice", tenant.Labels["liqo.io/remote-cluster-id"], "the tenant rule finds it by this label")
	assert.Equal(t, "envkit-alice", string(tenant.Spec.ClusterID))

	require.NoError(t, envkit.SetTenantCondition(ctx, cp.Client, key, authv1beta1.TenantConditionDrained))
	require.NoError(t, cp.Client.Get(ctx, key, &tenant))
	assert.Equal(t, authv1beta1.TenantConditionDrained, tenant.Spec.TenantCondition)

	require.NoError(t, cp.CreateNamespace(ctx, "envkit-existing"))
	require.NoError(t, envkit.CreateTenantNamespace(ctx, cp.Client, "envkit-existing", "bob"))
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: "envkit-existing"}, &got))
	assert.Equal(t, "bob", got.Labels["liqo.io/remote-cluster-id"], "an existing namespace is labelled")

	_, err = envkit.CreateConsumer(ctx, cp.Client, "envkit-alice")
	require.Error(t, err, "the Tenant exists")
	assert.Contains(t, err.Error(), "consumer envkit-alice")
}
