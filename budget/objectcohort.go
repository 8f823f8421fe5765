package budget

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// What a SliceBudget's status says of its cohort, from what the manager
// serving it serves there (internal/cohorts): who the members are
// (status.cohortMembers) and whether the cohort's slices hold more than
// its terms allow, which the CapacityBelowUsed condition says with reason
// CohortOverCommitted. Both are read from the members' books as they are,
// each tick of the status writer; nothing is kept.

// maxCohortMembers is how many names status.cohortMembers holds at most
// (the CRD's maxItems).
const maxCohortMembers = 100

// reasonCohortOverCommitted is the CapacityBelowUsed reason of a member
// whose slices hold more than its total and borrowing limit allow, or of
// every member of a cohort whose members hold more than its totals.
const reasonCohortOverCommitted = "CohortOverCommitted"

// cohortView is what the status shows of the budget's cohort.
type cohortView struct {
	// name is the cohort's, "" for none.
	name string
	// members are the names of the budgets the manager serves in it.
	members []string
	// over describes what is held beyond the cohort's terms, in order;
	// none when nothing is.
	over []string
}

// memberFigures are one member's figures.
type memberFigures struct {
	name        string
	total, used corev1.ResourceList
	// borrowing is its borrowing limit, per resource it names.
	borrowing corev1.ResourceList
}

// figuresOf reads a member's figures from its ledger.
func figuresOf(l *ledger.Ledger) memberFigures {
	borrowing, _, _ := l.CohortTerms()
	return memberFigures{name: l.Name(), total: l.Total(), used: l.Used(), borrowing: borrowing}
}

// viewOf is the view of the cohort of self (its figures, from its
// snapshot) among others, the members the manager serves there (self
// among them or not).
func viewOf(cohort string, self memberFigures, others []memberFigures) cohortView {
	v := cohortView{name: cohort}
	all := []memberFigures{self}
	v.members = append(v.members, self.name)
	for _, m := range others {
		v.members = append(v.members, m.name)
		if m.name != self.name {
			all = append(all, m)
		}
	}
	slices.Sort(v.members)
	v.members = slices.Compact(v.members)
	if len(v.members) > maxCohortMembers {
		v.members = v.members[:maxCohortMembers]
	}
	v.over = append(overOwnTerms(cohort, self), overCohortTotals(cohort, all)...)
	return v
}

// overOwnTerms describes each resource of which self's slices hold more
// than its total plus its borrowing limit (a resource with no borrowing
// limit may borrow all that is idle: never over by itself).
func overOwnTerms(cohort string, self memberFigures) []string {
	var out []string
	for _, n := range sortedResourceNames(self.total) {
		b, limited := self.borrowing[n]
		if !limited {
			continue
		}
		ceiling := self.total[n].DeepCopy()
		ceiling.Add(b)
		if u := self.used[n]; u.Cmp(ceiling) > 0 {
			t := self.total[n]
			out = append(out, fmt.Sprintf("budget %s holds %s %s, above its total %s and borrowing limit %s in cohort %s",
				self.name, n, u.String(), t.String(), b.String(), cohort))
		}
	}
	return out
}

// overCohortTotals describes each resource of which the members' slices
// hold more than the members' totals, of the members that limit it.
func overCohortTotals(cohort string, all []memberFigures) []string {
	names := map[corev1.ResourceName]bool{}
	for _, m := range all {
		for n := range m.total {
			names[n] = true
		}
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(names)) {
		var total, used resource.Quantity
		for _, m := range all {
			t, ok := m.total[n]
			if !ok {
				continue
			}
			total.Add(t)
			used.Add(m.used[n])
		}
		if used.Cmp(total) > 0 {
			out = append(out, fmt.Sprintf("cohort %s holds %s %s, above its members' totals %s", cohort, n, used.String(), total.String()))
		}
	}
	return out
}

// overMessage is the CapacityBelowUsed message of a member over its
// cohort's terms.
func overMessage(over []string) string {
	return strings.Join(over, "; ") + ": nothing new is admitted beyond the terms until the slices hold less; " +
		"with spec.preemption.reclaimWithinCohort the lenders take back what they lent"
}
