package slicetest_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// TestCohortReclaimThroughTheHarness: gold (10, takes back what it lends)
// and spot (2, may borrow) in one cohort, each class with its own budget.
// Spot holds 12, borrowing 10 of gold's; gold's slice asks 6: spot's
// slice is shrunk by exactly 6 through the reclaim path (it stays
// Accepted, reason Reclaimed), and gold's is admitted once it is.
func TestCohortReclaimThroughTheHarness(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	pool := "pool"
	gold, err := budget.New("gold", cpu("10"), budget.WithCohort(pool), budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimAny))
	require.NoError(t, err)
	spot, err := budget.New("spot", cpu("2"), budget.WithCohort(pool), budget.WithBorrowingLimit(cpu("14")))
	require.NoError(t, err)

	borrower := holding("spot-1", "spot", "12")
	waiter := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(borrower, waiter),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(gold), resourceslice.WithPriority(10)),
		slicetest.WithAnotherClass("spot", asked, resourceslice.WithBudget(spot)))

	first := h.Reconcile(waiter)
	require.NoError(t, first.Err)
	require.NotEqual(t, authv1beta1.ResourceSliceConditionAccepted, first.Decision, "spot holds all gold lends before the reclaim")
	assertCPU(t, "10", spot.Borrowed(), "spot borrows 10")
	assertCPU(t, "10", gold.Lent(), "all of it gold's")

	byName := map[string]slicetest.Result{}
	for _, r := range h.ReconcilePending() {
		require.NoError(t, r.Err)
		byName[r.Slice.Name] = r
	}
	shrunk, ok := byName["spot-1"]
	require.True(t, ok, "the reclaim queues the borrower")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, shrunk.Decision, "a reclaimed slice stays Accepted")
	assert.Equal(t, budget.ReasonReclaimed, shrunk.Reason)
	assertCPU(t, "6", shrunk.Resources, "the borrower yields what gold lacks, no more")
	admitted, ok := byName["gold-1"]
	require.True(t, ok, "the borrower's shrink wakes the waiter")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, admitted.Decision, "%s: %s", admitted.Reason, admitted.Message)
	assertCPU(t, "6", admitted.Resources, "gold gets what it asked")
	assertCPU(t, "4", spot.Borrowed(), "spot still borrows 4")
	assertCPU(t, "4", gold.Lent(), "of gold's idle 4")
}

// TestSliceBudgetCohort: two SliceBudgets whose specs name one cohort,
// each followed by its class's budget: gold (10, takes back what it
// lends) and spot (2, may borrow 14). Their status says who borrows and
// who lends, and gold's slice takes back what spot borrowed by the
// reclaim path.
func TestSliceBudgetCohort(t *testing.T) {
	goldSB := cpuSliceBudget("gold", "10")
	goldSB.Spec.Cohort = "pool"
	goldSB.Spec.Preemption = &v1alpha1.SliceBudgetPreemption{ReclaimWithinCohort: v1alpha1.CohortReclaimAny}
	spotSB := cpuSliceBudget("spot", "2")
	spotSB.Spec.Cohort = "pool"
	spotSB.Spec.BorrowingLimit = v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("14")}

	borrower := holding("spot-1", "spot", "12")
	waiter := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(borrower, waiter),
		slicetest.WithReconcilerOptions(resourceslice.WithPriority(10)),
		slicetest.WithAnotherClass("spot", asked),
		slicetest.WithSliceBudget(goldSB, "gold"), slicetest.WithSliceBudget(spotSB, "spot"))

	spot := h.SliceBudget("spot")
	assertCPU(t, "10", spot.Status.Borrowed, "spot borrows 10")
	assertCPU(t, "0", spot.Status.Lent, "spot lends nothing")
	assertCPU(t, "0", spot.Status.Available, "spot holds all gold and spot have")
	gold := h.SliceBudget("gold")
	assertCPU(t, "10", gold.Status.Lent, "all of it gold's")
	assertCPU(t, "0", gold.Status.Borrowed, "gold borrows nothing")

	first := h.Reconcile(waiter)
	require.NoError(t, first.Err)
	require.NotEqual(t, authv1beta1.ResourceSliceConditionAccepted, first.Decision)
	byName := map[string]slicetest.Result{}
	for _, r := range h.ReconcilePending() {
		require.NoError(t, r.Err)
		byName[r.Slice.Name] = r
	}
	assert.Equal(t, budget.ReasonReclaimed, byName["spot-1"].Reason)
	assertCPU(t, "6", byName["spot-1"].Resources, "spot yields exactly what gold lacks")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, byName["gold-1"].Decision, "%s", byName["gold-1"].Message)

	assertCPU(t, "4", h.SliceBudget("spot").Status.Borrowed, "spot still borrows 4")
	assertCPU(t, "4", h.SliceBudget("gold").Status.Lent, "of gold's idle 4")

	// Gold leaves the cohort while spot holds 4 of its: nothing is
	// revoked by an edit, and gold stays a member, lending nothing more,
	// until spot holds none of it; then it leaves.
	gold = h.SliceBudget("gold")
	gold.Spec.Cohort = ""
	gold.Spec.Preemption = nil
	require.NoError(t, h.Client.Update(context.Background(), gold))
	h.ReconcilePending()
	gold = h.SliceBudget("gold")
	assertCPU(t, "4", gold.Status.Lent, "spot still holds 4 of gold's")
	assertCPU(t, "0", gold.Status.Available, "gold does not admit what spot holds")
	require.NoError(t, h.Client.Delete(context.Background(), borrower.DeepCopy()))
	h.ReconcilePending()
	gold = h.SliceBudget("gold")
	assert.Empty(t, gold.Status.Lent, "out of a cohort, no lent figure")
	assertCPU(t, "4", gold.Status.Available, "gold's own 4 are its own again")
}

// A spec written around the API server's rules (cohort terms without a
// cohort) is refused whole, saying why, and the budget admits nothing
// new: its terms are never silently dropped.
func TestSliceBudgetCohortTermsWithoutCohortRefused(t *testing.T) {
	sb := cpuSliceBudget("lonely", "4")
	sb.Spec.BorrowingLimit = v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("2")}
	h := slicetest.New(t, "gold", asked, slicetest.WithSliceBudget(sb))
	ready := meta.FindStatusCondition(h.SliceBudget("lonely").Status.Conditions, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "need a cohort: set spec.cohort")
}
