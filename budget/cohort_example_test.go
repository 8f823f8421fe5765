package budget_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
)

// A provider sells tiers from one pool of 16 CPU: gold is guaranteed 10
// and lends them while idle, taking them back when its slices need them;
// spot is guaranteed 2 and may borrow up to 14 more; silver is guaranteed
// 4 and lends 2 of them. Each budget names its cohort; they meet when one
// manager serves them, however their classes are registered:
//
//	resourceslice.AddToManager(mgr, "gold", h, resourceslice.WithBudget(gold), resourceslice.WithPriority(100))
//	resourceslice.AddToManager(mgr, "spot", h, resourceslice.WithBudget(spot))
//	resourceslice.AddToManager(mgr, "silver", h, resourceslice.WithBudget(silver), resourceslice.WithPriority(50))
//
// Terms that cannot hold are refused when the budget is built.
func ExampleWithCohort() {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	gold, err := budget.New("gold", cpu("10"), budget.WithCohort("pool"), budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimAny))
	if err != nil {
		panic(err)
	}
	spot, err := budget.New("spot", cpu("2"), budget.WithCohort("pool"), budget.WithBorrowingLimit(cpu("14")))
	if err != nil {
		panic(err)
	}
	silver, err := budget.New("silver", cpu("4"), budget.WithCohort("pool"), budget.WithLendingLimit(cpu("2")),
		budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimLowerPriority))
	if err != nil {
		panic(err)
	}
	fmt.Println(gold.Name(), spot.Name(), silver.Name())

	_, err = budget.New("bronze", cpu("2"), budget.WithCohort("pool"), budget.WithLendingLimit(cpu("3")))
	fmt.Println(err)
	_, err = budget.New("bronze", cpu("2"), budget.WithBorrowingLimit(cpu("3")))
	fmt.Println(err)
	_, err = budget.New("bronze", cpu("2"), budget.WithCohort("Pool"))
	fmt.Println(err != nil)
	// Output:
	// gold spot silver
	// budget "bronze": lending limit above the total: cpu: 3 above the total 2
	// budget "bronze": WithBorrowingLimit: only for a member of a cohort (add WithCohort)
	// true
}
