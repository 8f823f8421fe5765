package main

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
)

// errFromObjectUnavailable is what budgetFromObject returns until the SDK
// has budget.FromObject.
var errFromObjectUnavailable = errors.New("FromObject not available yet: this build of the SDK cannot follow a SliceBudget (serve the class with budget or pool instead)")

// budgetFromObject builds the budget that follows the SliceBudget name on
// mgr, with the signature of budget.FromObject.
//
// MERGE: replace the body with `return budget.FromObject(mgr, name, opts...)`
// (or call budget.FromObject in newManager and delete this file with
// errFromObjectUnavailable and its test).
func budgetFromObject(mgr manager.Manager, name string, opts ...budget.Option) (*budget.Budget, error) {
	return nil, errFromObjectUnavailable
}
