package slicetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// A budget re-checks its waiting slices on a timer after a change that
// may alter what blocks them. ReconcilePending runs that re-check itself:
// when it returns, a waiter's condition names what blocks it now, with no
// sleep and whatever the machine's speed.
func TestReconcilePendingRunsTheBudgetsRecheck(t *testing.T) {
	b := cpuBudget(t, "10", budget.WithConsumerLimit(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}))
	held := holding("acme-1", "gold", "3")
	held.Namespace = "acme"
	other := holding("globex-1", "spot", "7")
	other.Namespace = "globex"
	waiter := slicetest.NewSlice("acme-2", slicetest.WithNamespace("acme"), slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "2"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(held, other, waiter),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(b)),
		slicetest.WithAnotherClass("spot", asked, resourceslice.WithBudget(b)))

	first := h.Reconcile(waiter)
	require.NoError(t, first.Err)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, first.Decision)
	require.Equal(t, budget.ReasonExhausted, first.Reason, "10 of 10 CPU held: the budget is full")

	// globex's slice goes: the budget has room, but acme's limit (4, 3
	// held) still keeps the waiter out. Only the budget's re-check says so.
	require.NoError(t, h.Client.Delete(context.Background(), other))
	h.ReconcilePending()

	var got authv1beta1.ResourceSlice
	require.NoError(t, h.Client.Get(context.Background(), client.ObjectKeyFromObject(waiter), &got))
	c := conditions.Get(&got, authv1beta1.ResourceSliceConditionTypeResources)
	require.NotNil(t, c)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, c.Status)
	assert.Equal(t, budget.ReasonConsumerLimit, c.Reason, "the waiter names what blocks it now: %s", c.Message)
	assert.Empty(t, h.ReconcilePending(), "nothing is left pending")
}
