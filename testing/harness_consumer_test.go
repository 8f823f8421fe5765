package slicetest_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// consumers grants what a slice asks and records, per slice, the consumer
// the SDK gave the handler.
type consumers map[string]string

func (c consumers) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	c[rs.Name] = resourceslice.Consumer(ctx)
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
}

var _ handler.Handler = consumers(nil)

// WithConsumer("acme") makes acme the consumer, as the SDK sees it (its
// tenant namespace's label), not only what the slice claims: a consumer
// limit on acme applies to the slice, seeded or created during the test,
// and not to another consumer's.
func TestWithConsumerIsTheConsumer(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	b := cpuBudget(t, "10")
	require.NoError(t, b.SetConsumerLimit("acme", cpu("2")))
	seen := consumers{}
	big := slicetest.NewSlice("acme-big", slicetest.WithConsumer("acme"), slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "3"))
	assert.Equal(t, "liqo-tenant-acme", big.Namespace, "the slice is in acme's tenant namespace, as Liqo puts it")
	h := slicetest.New(t, "gold", seen, slicetest.WithObjects(big), slicetest.WithReconcilerOptions(resourceslice.WithBudget(b)))

	res := h.Reconcile(big)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision, res.Message)
	assert.Equal(t, budget.ReasonConsumerLimit, res.Reason, "acme's limit (2 CPU) applies: %s", res.Message)
	assert.Equal(t, "acme", seen["acme-big"], "the handler saw acme")

	ctx := context.Background()
	var ns corev1.Namespace
	require.NoError(t, h.Client.Get(ctx, client.ObjectKey{Name: "liqo-tenant-acme"}, &ns))
	assert.Equal(t, "acme", ns.Labels["liqo.io/remote-cluster-id"], "the harness made the tenant namespace Liqo makes")

	// Created through the harness's client: its tenant namespace is made too.
	other := slicetest.NewSlice("globex-1", slicetest.WithConsumer("globex"), slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "3"))
	require.NoError(t, h.Client.Create(ctx, other))
	res = h.Reconcile(other)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "acme's limit is not globex's: %s", res.Message)
	assert.Equal(t, "globex", seen["globex-1"])

	small := slicetest.NewSlice("acme-small", slicetest.WithConsumer("acme"), slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "2"))
	require.NoError(t, h.Client.Create(ctx, small))
	res = h.Reconcile(small)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "within acme's limit: %s", res.Message)
	assert.Equal(t, "acme", seen["acme-small"])
}

// A test that seeds the tenant namespace keeps it: here unlabelled, so the
// namespace is the consumer, and acme's limit does not apply.
func TestWithConsumerKeepsASeededNamespace(t *testing.T) {
	b := cpuBudget(t, "10")
	require.NoError(t, b.SetConsumerLimit("acme", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}))
	seen := consumers{}
	rs := slicetest.NewSlice("s", slicetest.WithConsumer("acme"), slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "3"))
	unlabelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rs.Namespace}}
	h := slicetest.New(t, "gold", seen, slicetest.WithObjects(unlabelled, rs), slicetest.WithReconcilerOptions(resourceslice.WithBudget(b)))
	res := h.Reconcile(rs)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, res.Message)
	assert.Equal(t, "liqo-tenant-acme", seen["s"], "an unlabelled namespace is its own consumer")

	// A slice left in DefaultNamespace keeps it as its consumer.
	plain := slicetest.NewSlice("plain", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "1"))
	require.NoError(t, h.Client.Create(context.Background(), plain))
	res = h.Reconcile(plain)
	require.NoError(t, res.Err)
	assert.Equal(t, slicetest.DefaultNamespace, seen["plain"])
}
