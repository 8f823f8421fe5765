package integration

import (
	"slices"
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
// and prefix-spot (cpu 1, may borrow 3) in cohort prefix-tiers, and
// prefix-silver (cpu 1) in cohort prefix-teirs, misspelt.
func meetBudgets(t *testing.T, prefix string) {
	t.Helper()
	c := sbClient(t)
	createSliceBudget(t, c, prefix+"-gold", v1alpha1.SliceBudgetSpec{Total: cpuList("4"), Cohort: prefix + "-tiers"})
	createSliceBudget(t, c, prefix+"-spot", v1alpha1.SliceBudgetSpec{Total: cpuList("1"), Cohort: prefix + "-tiers", BorrowingLimit: cpuList("3")})
	createSliceBudget(t, c, prefix+"-silver", v1alpha1.SliceBudgetSpec{Total: cpuList("1"), Cohort: prefix + "-teirs"})
}

// serveApart starts a manager following the SliceBudgets of
// meetBudgets, their classes (of the same names) registered by separate
// AddToManager calls, as a new user writes them.
func serveApart(t *testing.T, prefix string) map[string]*budget.Budget {
	t.Helper()
	out := map[string]*budget.Budget{}
	testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		for _, tier := range []string{"gold", "spot", "silver"} {
			name := prefix + "-" + tier
			b, err := budget.FromObject(mgr, name)
			if err != nil {
				return err
			}
			out[tier] = b
			if err := resourceslice.AddToManager(mgr, name, accept("Granted", nil), resourceslice.WithBudget(b),
				resourceslice.WithoutTenantRule()); err != nil {
				return err
			}
		}
		return nil
	})
	return out
}

// Two classes registered with two AddToManager calls, their SliceBudgets
// naming one cohort: spot's slice asks 4, its own 1 and the 3 gold leaves
// idle, and is admitted with 4; both SliceBudgets show it (spot borrows
// 3, gold lends 3). Before the manager kept the cohorts, each call made a
// cohort of its own: spot stayed at its 1, Ready, borrowing nothing.
// Each SliceBudget says who it shares with (status.cohortMembers): gold
// and spot name each other, and silver, whose spec.cohort is misspelt,
// shows a cohort of one.
func TestCohortMeetsAcrossAddToManagerCalls(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "meet")
	meetBudgets(t, "meet")
	spot := serveApart(t, "meet")["spot"]
	testkit.Eventually(t, "gold and spot list each other, silver only itself", func() bool {
		g, s, v := sliceBudget(t, c, "meet-gold").Status, sliceBudget(t, c, "meet-spot").Status, sliceBudget(t, c, "meet-silver").Status
		both := []string{"meet-gold", "meet-spot"}
		return slices.Equal(g.CohortMembers, both) && slices.Equal(s.CohortMembers, both) &&
			slices.Equal(v.CohortMembers, []string{"meet-silver"})
	})

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
