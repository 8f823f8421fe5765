package integration

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// One edit of a SliceBudget is one change (issue 42, item 4): slices hold
// 16 of a total lowered to 10 while preemption was off; one patch that
// turns preemption on and raises the total to 16 records no Reclaimed
// event and shrinks no slice (preemption applied before the new total once
// recorded `reclaimed cpu 6 ...: the total fell below what the slices
// held`, and no slice changed).
func TestSliceBudgetOneEditReclaimsNothingFalse(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-oneedit")
	createSliceBudget(t, c, "sb-oneedit", v1alpha1.SliceBudgetSpec{Total: cpuList("16")})
	objectClass(t, "sb-oneedit", "sb-oneedit")
	create(t, sliceIn(ns, "s1", "sb-oneedit", slicetest.WithRequest(corev1.ResourceCPU, "8")))
	create(t, sliceIn(ns, "s2", "sb-oneedit", slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "both slices Accepted with 8", func() bool {
		return conditions.IsAccepted(get(t, ns, "s1")) && conditions.IsAccepted(get(t, ns, "s2"))
	})
	editSliceBudget(t, c, "sb-oneedit", func(s *v1alpha1.SliceBudgetSpec) { s.Total = cpuList("10") })
	testkit.Eventually(t, "the total of 10 applied", func() bool {
		sb := sliceBudget(t, c, "sb-oneedit")
		return sb.Status.ObservedGeneration == sb.Generation && cpuIs(sb.Status.Capacity, "10")
	})

	editSliceBudget(t, c, "sb-oneedit", func(s *v1alpha1.SliceBudgetSpec) {
		s.Preemption = &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}
		s.Total = cpuList("16")
	})
	testkit.Eventually(t, "the edit applied", func() bool {
		sb := sliceBudget(t, c, "sb-oneedit")
		return sb.Status.ObservedGeneration == sb.Generation && cpuIs(sb.Status.Capacity, "16")
	})
	testkit.Consistently(t, 2*time.Second, "no Reclaimed event, no slice shrunk", func() bool {
		if len(reclaimedEvents(t, "sb-oneedit")) > 0 {
			return false
		}
		for _, n := range []string{"s1", "s2"} {
			rs := get(t, ns, n)
			if rs.Status.Resources.Cpu().Cmp(resource.MustParse("8")) != 0 || conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).Reason == budget.ReasonReclaimed {
				return false
			}
		}
		return true
	})
	assert.Empty(t, reclaimedEvents(t, "sb-oneedit"), "no reclaim")
}

// reclaimedEvents are the notes of the SliceBudget's Reclaimed events.
func reclaimedEvents(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, e := range budgetEvents(t, name) {
		if e.Reason == budget.ReasonReclaimed {
			out = append(out, e.Note)
		}
	}
	return out
}
