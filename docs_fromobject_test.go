package sliceclass_test

// The Go snippet of docs/budgets.md that calls budget.FromObject, verbatim;
// TestDocSnippetsCompile reads this file as it reads docs_test.go.

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// docs/budgets.md

func setupFromObject(mgr ctrl.Manager, policy handler.Handler) error {
	premium, err := budget.FromObject(mgr, "premium") // follows SliceBudget "premium" live
	if err != nil {
		return err
	}
	for class, priority := range map[string]int32{"gold": 100, "spot": 0} {
		if err := resourceslice.AddToManager(mgr, class, policy,
			resourceslice.WithBudget(premium), resourceslice.WithPriority(priority)); err != nil {
			return err
		}
	}
	return nil
}

var _ = setupFromObject
