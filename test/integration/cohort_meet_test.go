package integration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Cohorts meet in the manager (issue 50): budgets naming one cohort meet
// when one manager serves them, however their classes were registered.

// meetBudgets creates SliceBudgets prefix-gold (cpu 4, lends all of it)
// and prefix-spot (cpu 1, may borrow 3), in cohorts goldCohort and
// spotCohort.
func meetBudgets(t *testing.T, prefix, goldCohort, spotCohort string) {
	t.Helper()
	c := sbClient(t)
	createSliceBudget(t, c, prefix+"-gold", v1alpha1.SliceBudgetSpec{Total: cpuList("4"), Cohort: goldCohort})
	spot := v1alpha1.SliceBudgetSpec{Total: cpuList("1"), Cohort: spotCohort}
	if spotCohort != "" {
		spot.BorrowingLimit = cpuList("3")
	}
	createSliceBudget(t, c, prefix+"-spot", spot)
}

// serveApart starts a manager following the SliceBudgets prefix-gold and
// prefix-spot, their classes (of the same names) registered by two
// separate AddToManager calls, as a new user writes them.
func serveApart(t *testing.T, prefix string) (gold, spot *budget.Budget) {
	t.Helper()
	testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		var err error
		if gold, err = budget.FromObject(mgr, prefix+"-gold"); err != nil {
			return err
		}
		if spot, err = budget.FromObject(mgr, prefix+"-spot"); err != nil {
			return err
		}
		if err := resourceslice.AddToManager(mgr, prefix+"-gold", accept("Granted", nil), resourceslice.WithBudget(gold),
			resourceslice.WithoutTenantRule()); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, prefix+"-spot", accept("Granted", nil), resourceslice.WithBudget(spot),
			resourceslice.WithoutTenantRule())
	})
	return gold, spot
}

// Two classes registered with two AddToManager calls, their SliceBudgets
// naming one cohort: spot's slice asks 4, its own 1 and the 3 gold leaves
// idle, and is admitted with 4; both SliceBudgets show it (spot borrows
// 3, gold lends 3). Before the manager kept the cohorts, each call made a
// cohort of its own: spot stayed at its 1, Ready, borrowing nothing.
func TestCohortMeetsAcrossAddToManagerCalls(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "meet")
	meetBudgets(t, "meet", "meet-tiers", "meet-tiers")
	_, spot := serveApart(t, "meet")

	create(t, sliceIn(ns, "s", "meet-spot", slicetest.WithRequest(corev1.ResourceCPU, "4")))
	testkit.Eventually(t, "spot's slice Accepted with 4, 3 of them gold's", func() bool {
		return offerIs(t, ns, "s", "4", "")
	})
	assertCPUIs(t, "3", spot.Borrowed(), "spot borrows 3")
	testkit.Eventually(t, "the SliceBudgets show spot borrowing 3 and gold lending 3", func() bool {
		g, s := sliceBudget(t, c, "meet-gold").Status, sliceBudget(t, c, "meet-spot").Status
		return cpuIs(s.Borrowed, "3") && cpuIs(g.Lent, "3")
	})
}
