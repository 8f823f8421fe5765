package slicetest_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// A class draws from a SliceBudget of 10 CPUs; two slices ask for 6 each.
// The first is admitted and the second waits, which the SliceBudget's
// status shows; raising spec.total to 12 through the harness's client
// admits the waiter at the next reconcile. Harness.SliceBudget writes the
// status when it is read, so the test needs no sleep. In a test, pass your
// *testing.T.
func ExampleWithSliceBudget() {
	t := &testing.T{}
	premium := &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "premium"},
		Spec:       v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("10")}},
	}
	s1 := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	s2 := slicetest.NewSlice("s2", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", policy, slicetest.WithObjects(s1, s2), slicetest.WithSliceBudget(premium))

	for _, s := range []string{"s1", "s2"} {
		res := h.Reconcile(slicetest.NewSlice(s))
		fmt.Println(s+":", res.Decision, res.Reason)
	}
	show := func(sb *v1alpha1.SliceBudget) {
		fmt.Printf("accepted %d, waiting %d, used %s, available %s\n",
			sb.Status.Accepted, sb.Status.Waiting, sb.Status.Used.Cpu(), sb.Status.Available.Cpu())
	}
	sb := h.SliceBudget("premium")
	show(sb)

	sb.Spec.Total[corev1.ResourceCPU] = resource.MustParse("12")
	if err := h.Client.Update(context.Background(), sb); err != nil {
		fmt.Println(err)
	}
	for _, res := range h.ReconcilePending() {
		fmt.Println(res.Slice.Name+":", res.Decision, res.Reason)
	}
	show(h.SliceBudget("premium"))
	// Output:
	// s1: Accepted Granted
	// s2: Denied BudgetExhausted
	// accepted 1, waiting 1, used 6, available 4
	// s2: Accepted Granted
	// accepted 2, waiting 0, used 12, available 0
}
