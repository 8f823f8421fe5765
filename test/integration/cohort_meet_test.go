package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Over its terms is a condition, never silence (issue 50): spot (2, may
// borrow 10) holds 8, borrowing 6 of gold's 10; its borrowingLimit is cut
// to 2, below what it borrows. Nothing is revoked by the edit, and spot's
// SliceBudget says it is over: CapacityBelowUsed True, reason
// CohortOverCommitted naming the cohort and the figures, and one Warning
// event as it begins. Gold, within its terms and the cohort's 12, does
// not. Then gold's total is cut below what the cohort holds: both say
// so. Before, both stayed Ready with CapacityBelowUsed False.
func TestCohortMemberOverItsBorrowingLimitSaysSo(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "overc")
	createSliceBudget(t, c, "overc-gold", v1alpha1.SliceBudgetSpec{Total: cpuList("10"), Cohort: "overc"})
	createSliceBudget(t, c, "overc-spot", v1alpha1.SliceBudgetSpec{Total: cpuList("2"), Cohort: "overc", BorrowingLimit: cpuList("10")})
	testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		for _, name := range []string{"overc-gold", "overc-spot"} {
			b, err := budget.FromObject(mgr, name)
			if err != nil {
				return err
			}
			if err := resourceslice.AddToManager(mgr, name, accept("Granted", nil), resourceslice.WithBudget(b),
				resourceslice.WithoutTenantRule()); err != nil {
				return err
			}
		}
		return nil
	})
	create(t, sliceIn(ns, "s", "overc-spot", slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "spot's slice Accepted with 8, borrowing 6", func() bool { return offerIs(t, ns, "s", "8", "") })
	testkit.Eventually(t, "spot's SliceBudget shows it borrows 6, within its terms", func() bool {
		st := sliceBudget(t, c, "overc-spot").Status
		cond := capacityBelowUsed(t, "overc-spot")
		return cpuIs(st.Borrowed, "6") && cond != nil && cond.Status == metav1.ConditionFalse
	})

	editSliceBudget(t, c, "overc-spot", func(s *v1alpha1.SliceBudgetSpec) { s.BorrowingLimit = cpuList("2") })
	testkit.Eventually(t, "spot says it holds more than its terms allow", func() bool {
		cond := capacityBelowUsed(t, "overc-spot")
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == "CohortOverCommitted"
	})
	cond := capacityBelowUsed(t, "overc-spot")
	assert.Contains(t, cond.Message, "budget overc-spot holds cpu 8, above its total 2 and borrowing limit 2 in cohort overc")
	testkit.Eventually(t, "one Warning event on spot as it begins", func() bool {
		var n int
		for _, e := range budgetEvents(t, "overc-spot") {
			if e.Reason == "CapacityBelowUsed" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "cohort overc") {
				n++
			}
		}
		return n == 1
	})
	testkit.Consistently(t, 2*time.Second, "spot keeps its 8, gold says nothing is over, one event", func() bool {
		g := capacityBelowUsed(t, "overc-gold")
		return offerIs(t, ns, "s", "8", "") && (g == nil || g.Status == metav1.ConditionFalse) && len(budgetEvents(t, "overc-spot")) == 1
	})

	// The limit back to 10: spot is within its terms again. Gold's total
	// cut to 4: the members hold 8 of their 6, and each says so, gold
	// with its own event, though gold's slices hold nothing.
	editSliceBudget(t, c, "overc-spot", func(s *v1alpha1.SliceBudgetSpec) { s.BorrowingLimit = cpuList("10") })
	testkit.Eventually(t, "spot within its terms again", func() bool {
		cond := capacityBelowUsed(t, "overc-spot")
		return cond != nil && cond.Status == metav1.ConditionFalse
	})
	editSliceBudget(t, c, "overc-gold", func(s *v1alpha1.SliceBudgetSpec) { s.Total = cpuList("4") })
	for _, name := range []string{"overc-gold", "overc-spot"} {
		testkit.Eventually(t, name+" says the cohort holds more than its totals", func() bool {
			cond := capacityBelowUsed(t, name)
			return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == "CohortOverCommitted" &&
				strings.Contains(cond.Message, "cohort overc holds cpu 8, above its members' totals 6")
		})
	}
	testkit.Eventually(t, "a Warning event on gold as it begins", func() bool {
		for _, e := range budgetEvents(t, "overc-gold") {
			if e.Reason == "CapacityBelowUsed" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "cohort overc") {
				return true
			}
		}
		return false
	})
	assert.True(t, offerIs(t, ns, "s", "8", ""), "the cut revokes nothing")
}
