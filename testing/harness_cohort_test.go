package slicetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
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
	pool, err := budget.NewCohort("pool")
	require.NoError(t, err)
	gold, err := budget.New("gold", cpu("10"), budget.WithCohort(pool), budget.WithReclaimWithinCohort(budget.ReclaimAny))
	require.NoError(t, err)
	spot, err := budget.New("spot", cpu("2"), budget.WithCohort(pool), budget.WithBorrowingLimit(cpu("14")))
	require.NoError(t, err)

	borrower := holding("spot-1", "spot", "12")
	waiter := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(borrower, waiter),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(gold), resourceslice.WithPriority(10)),
		slicetest.AlsoServe("spot", asked, resourceslice.WithBudget(spot)))

	first := h.Reconcile(waiter)
	require.NoError(t, first.Err)
	require.NotEqual(t, conditions.Accepted, first.Decision, "spot holds all gold lends before the reclaim")
	assertCPU(t, "10", spot.Borrowed(), "spot borrows 10")
	assertCPU(t, "10", gold.Lent(), "all of it gold's")

	byName := map[string]slicetest.Result{}
	for _, r := range h.ReconcilePending() {
		require.NoError(t, r.Err)
		byName[r.Slice.Name] = r
	}
	shrunk, ok := byName["spot-1"]
	require.True(t, ok, "the reclaim queues the borrower")
	assert.Equal(t, conditions.Accepted, shrunk.Decision, "a reclaimed slice stays Accepted")
	assert.Equal(t, budget.ReasonReclaimed, shrunk.Reason)
	assertCPU(t, "6", shrunk.Resources, "the borrower yields what gold lacks, no more")
	admitted, ok := byName["gold-1"]
	require.True(t, ok, "the borrower's shrink wakes the waiter")
	assert.Equal(t, conditions.Accepted, admitted.Decision, "%s: %s", admitted.Reason, admitted.Message)
	assertCPU(t, "6", admitted.Resources, "gold gets what it asked")
	assertCPU(t, "4", spot.Borrowed(), "spot still borrows 4")
	assertCPU(t, "4", gold.Lent(), "of gold's idle 4")
}
