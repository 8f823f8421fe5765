package sliceclass_test

// The Go snippets of docs/budgets.md and docs/testing.md on budgets as
// objects (budget.FromObject, slicetest.WithSliceBudget), verbatim;
// TestDocSnippetsCompile reads this file as it reads docs_test.go.

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

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// docs/budgets.md

func setupFromObject(mgr ctrl.Manager, set *resourceslice.ClassSet, policy handler.Handler) error {
	premium, err := budget.FromObject(mgr, "premium") // follows SliceBudget "premium" live
	if err != nil {
		return err
	}
	for class, priority := range map[string]int32{"gold": 100, "spot": 0} {
		if err := set.Serve(class, policy,
			resourceslice.WithBudget(premium), resourceslice.WithPriority(priority)); err != nil {
			return err
		}
	}
	return nil
}

var _ = setupFromObject

// docs/testing.md

func TestGoldWithASliceBudget(t *testing.T) {
	premium := &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "premium"},
		Spec:       v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("10")}},
	}
	s1 := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	s2 := slicetest.NewSlice("s2", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", capped, slicetest.WithObjects(s1, s2), slicetest.WithSliceBudget(premium))
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, h.Reconcile(s1).Decision)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, h.Reconcile(s2).Decision) // 4 CPU free: s2 waits

	sb := h.SliceBudget("premium") // the status written now, as the fake API server holds it
	assert.Equal(t, int32(1), sb.Status.Accepted)
	assert.Equal(t, int32(1), sb.Status.Waiting)
	assert.True(t, sb.Status.Available.Cpu().Equal(resource.MustParse("4")))

	sb.Spec.Total[corev1.ResourceCPU] = resource.MustParse("12") // an operator raises the total
	require.NoError(t, h.Client.Update(context.Background(), sb))
	h.ReconcilePending() // the budget follows the edit; the waiter is woken and admitted
	assert.Equal(t, int32(2), h.SliceBudget("premium").Status.Accepted)
}
