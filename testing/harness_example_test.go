package slicetest_test

import (
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Two classes share one budget with preemption: gold (priority 10) and spot
// (priority 0). A spot slice already holds 8 of the 10 CPUs; a gold slice
// asks for 6. The gold slice waits, the budget reclaims 4 CPUs from the
// spot slice (Accepted, reason Reclaimed), and the shrink admits the gold
// slice; the spot slice is woken once more and keeps 4 CPUs, waiting to
// grow back. ReconcilePending runs what the controllers' queues hold.
// In a test, pass your *testing.T.
func ExampleWithAnotherClass() {
	t := &testing.T{}
	b, _ := budget.New("shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithPreemption())

	spot := slicetest.NewSlice("spot-1", slicetest.WithClass("spot"), slicetest.WithRequest("cpu", "8"),
		slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Granted"))
	spot.Status.Resources = spot.Spec.Resources.DeepCopy() // holds 8 CPUs
	gold := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))

	h := slicetest.New(t, "gold", policy, slicetest.WithObjects(spot, gold),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(b), resourceslice.WithPriority(10)),
		slicetest.WithAnotherClass("spot", policy, resourceslice.WithBudget(b)))

	res := h.Reconcile(gold)
	fmt.Println("gold-1:", res.Decision, res.Reason)
	for _, r := range h.ReconcilePending() {
		fmt.Println(r.Slice.Name+":", r.Decision, r.Reason, r.Resources.Cpu())
	}
	// Output:
	// gold-1: Denied BudgetExhausted
	// spot-1: Accepted Reclaimed 4
	// gold-1: Accepted Granted 6
	// spot-1: Accepted Reclaimed 4
}
