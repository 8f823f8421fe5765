package budget_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/budget"
)

// A provider sells tiers from one pool of 16 CPU: gold is guaranteed 10
// and lends them while idle, spot is guaranteed 2 and may borrow up to 14
// more, silver is guaranteed 4 and lends 2 of them. Each budget's Free is
// what its slices may still take in the cohort: spot may take all the
// others may lend, but never silver's 2 it keeps; gold, which takes back
// what it lent (WithReclaimWithinCohort), is admitted at once up to what
// is idle, and shrinks borrowers for the rest of its 10.
func ExampleWithCohort() {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	pool, err := budget.NewCohort("pool")
	if err != nil {
		panic(err)
	}
	gold, err := budget.New("gold", cpu("10"), budget.WithCohort(pool), budget.WithReclaimWithinCohort(budget.ReclaimAny))
	if err != nil {
		panic(err)
	}
	spot, err := budget.New("spot", cpu("2"), budget.WithCohort(pool), budget.WithBorrowingLimit(cpu("14")))
	if err != nil {
		panic(err)
	}
	silver, err := budget.New("silver", cpu("4"), budget.WithCohort(pool), budget.WithLendingLimit(cpu("2")),
		budget.WithReclaimWithinCohort(budget.ReclaimLowerPriority))
	if err != nil {
		panic(err)
	}
	fmt.Println(pool.Members())
	for _, b := range []*budget.Budget{gold, spot, silver} {
		free, borrowed := b.Free()[corev1.ResourceCPU], b.Borrowed()[corev1.ResourceCPU]
		fmt.Printf("%s: free %s, borrowed %s\n", b.Name(), free.String(), borrowed.String())
	}

	// Terms that cannot hold are refused.
	_, err = budget.New("bronze", cpu("2"), budget.WithCohort(pool), budget.WithLendingLimit(cpu("3")))
	fmt.Println(err)
	_, err = budget.New("bronze", cpu("2"), budget.WithBorrowingLimit(cpu("3")))
	fmt.Println(err)
	// Output:
	// [gold silver spot]
	// gold: free 14, borrowed 0
	// spot: free 14, borrowed 0
	// silver: free 16, borrowed 0
	// budget "bronze": lending limit above the total: cpu: 3 above the total 2
	// budget "bronze": WithBorrowingLimit: only for a member of a cohort (add WithCohort)
}
