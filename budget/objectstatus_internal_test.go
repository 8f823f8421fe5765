package budget

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

func cpuRL(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

// desiredStatus, per case: the figures of an applied spec, at most
// MaxConsumers consumers (no unnamed one), a Ready condition that keeps
// its transition time while its status holds and says why a spec is not
// applied.
func TestDesiredStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := ledger.Snapshot{Total: cpuRL("10"), Used: cpuRL("6"), InUse: cpuRL("0"), Reclaiming: cpuRL("0"), Free: cpuRL("4"),
		Accepted: 1, Waiting: 1}
	for i := range 25 {
		snap.Consumers = append(snap.Consumers, ledger.ConsumerSnapshot{Name: fmt.Sprintf("c%02d", i), Used: cpuRL("0")})
	}
	snap.Consumers[3].Name = ""
	sb := &v1alpha1.SliceBudget{}
	sb.Generation = 3
	applied := applied{read: true, generation: 3, ok: true, reason: reasonApplied, message: "spec applied: the budget admits by it"}

	st := desiredStatus(sb, applied, snap, cohortView{}, t0)
	assert.Equal(t, int32(1), st.Accepted)
	assert.Equal(t, int32(1), st.Waiting)
	assert.Equal(t, int64(3), st.ObservedGeneration)
	assert.True(t, st.Available.Cpu().Equal(resource.MustParse("4")))
	require.Len(t, st.Consumers, v1alpha1.MaxConsumers, "bounded")
	for _, c := range st.Consumers {
		assert.NotEmpty(t, c.Name, "an unnamed consumer is not listed")
	}
	require.Len(t, st.Conditions, 1)
	assert.Equal(t, metav1.ConditionTrue, st.Conditions[0].Status)

	// Later, same status: the transition time is kept.
	sb.Status = st
	again := desiredStatus(sb, applied, snap, cohortView{}, t0.Add(time.Hour))
	assert.True(t, again.Conditions[0].LastTransitionTime.Time.Equal(t0), "kept: %v", again.Conditions[0].LastTransitionTime)

	// A refused spec with one in force: Ready False, the figures kept.
	refused := applied
	refused.generation, refused.reason, refused.message = 4, reasonSpecRefused, "spec.total names no resource"
	st = desiredStatus(sb, refused, snap, cohortView{}, t0.Add(time.Hour))
	assert.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, "spec.total names no resource: the last spec applied stays in force", st.Conditions[0].Message)
	assert.NotNil(t, st.Capacity)

	// None in force: no figures, and the budget admits nothing new.
	refused.ok = false
	st = desiredStatus(sb, refused, snap, cohortView{}, t0)
	assert.Nil(t, st.Capacity)
	assert.Empty(t, st.Consumers)
	assert.Equal(t, "spec.total names no resource: the budget admits nothing new", st.Conditions[0].Message)
}

// The status patch carries the resourceVersion it was computed from, and
// accepted and waiting even at 0 (a diff would leave them out).
func TestStatusPatchWritesZeroCounts(t *testing.T) {
	base := &v1alpha1.SliceBudget{}
	base.Name, base.ResourceVersion = "gold", "42"
	obj := base.DeepCopy()
	obj.Status.Capacity = cpuRL("10")
	data, err := statusPatch(base, obj)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, map[string]any{
		"metadata": map[string]any{"resourceVersion": "42"},
		"status":   map[string]any{"capacity": map[string]any{"cpu": "10"}, "accepted": float64(0), "waiting": float64(0)},
	}, got)
}

// fullest names the resource of any name whose capacity the slices hold
// the largest share of, in exact percent rounded down.
func TestFullest(t *testing.T) {
	cases := map[string]struct {
		reason         string
		capacity, used corev1.ResourceList
		want           *v1alpha1.Fullness
	}{
		"GPUOnly": {reason: "a budget of GPUs only shows its GPUs",
			capacity: rl("nvidia.com/gpu", "4"), used: rl("nvidia.com/gpu", "2"),
			want: &v1alpha1.Fullness{Resource: "nvidia.com/gpu", Percent: 50}},
		"Largest": {reason: "the largest share wins, whatever the resource",
			capacity: rl("cpu", "64", "memory", "256Gi"), used: rl("cpu", "16", "memory", "200Gi"),
			want: &v1alpha1.Fullness{Resource: "memory", Percent: 78}},
		"Exact": {reason: "29 of 100 is 29, not the 28 a float gives",
			capacity: rl("cpu", "100"), used: rl("cpu", "29"), want: &v1alpha1.Fullness{Resource: "cpu", Percent: 29}},
		"Milli": {reason: "milli-units count: 300m of 1 is 30",
			capacity: rl("cpu", "1"), used: rl("cpu", "300m"), want: &v1alpha1.Fullness{Resource: "cpu", Percent: 30}},
		"RoundsDown": {reason: "nearly full is not full",
			capacity: rl("cpu", "1000"), used: rl("cpu", "999500m"), want: &v1alpha1.Fullness{Resource: "cpu", Percent: 99}},
		"Empty": {reason: "a served budget holding nothing shows 0, not a blank",
			capacity: rl("cpu", "8"), used: nil, want: &v1alpha1.Fullness{Resource: "cpu", Percent: 0}},
		"Tie": {reason: "a tie goes to the first name",
			capacity: rl("memory", "2Gi", "cpu", "2"), used: rl("memory", "1Gi", "cpu", "1"),
			want: &v1alpha1.Fullness{Resource: "cpu", Percent: 50}},
		"Over": {reason: "a capacity below what is held shows over 100",
			capacity: rl("cpu", "8"), used: rl("cpu", "12"), want: &v1alpha1.Fullness{Resource: "cpu", Percent: 150}},
		"Capped": {reason: "far over is capped",
			capacity: rl("cpu", "1m"), used: rl("cpu", "64"), want: &v1alpha1.Fullness{Resource: "cpu", Percent: v1alpha1.MaxFullPercent}},
		"ZeroHeld": {reason: "a capacity of 0 that something holds is the cap",
			capacity: rl("cpu", "8", "nvidia.com/gpu", "0"), used: rl("cpu", "8", "nvidia.com/gpu", "1"),
			want: &v1alpha1.Fullness{Resource: "nvidia.com/gpu", Percent: v1alpha1.MaxFullPercent}},
		"ZeroUnheld": {reason: "a resource offered at 0 and held by none is left out: it admits none by design",
			capacity: rl("cpu", "8", "nvidia.com/gpu", "0"), used: rl("cpu", "2"),
			want: &v1alpha1.Fullness{Resource: "cpu", Percent: 25}},
		"AllZero": {reason: "a budget of zeros is full",
			capacity: rl("nvidia.com/gpu", "0", "cpu", "0"), want: &v1alpha1.Fullness{Resource: "cpu", Percent: 100}},
		"Unlimited": {reason: "a budget that limits nothing has no fullest", capacity: nil, used: rl("cpu", "1"), want: nil},
		"Huge": {reason: "quantities beyond int64 milli-units compute exactly",
			capacity: rl("memory", "8Ei"), used: rl("memory", "4Ei"), want: &v1alpha1.Fullness{Resource: "memory", Percent: 50}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, fullest(tc.capacity, tc.used), tc.reason)
		})
	}
}

// The CapacityBelowUsed condition follows the state, not the figures: it
// turns True with the resources and figures in its message, stays as it
// is while the state holds (a write would follow every figure), and turns
// False when the slices hold no more than the capacity.
func TestCapacityBelowUsedCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	counted := func(total, used string) ledger.Snapshot {
		return ledger.Snapshot{Total: rl("cpu", total, "nvidia.com/gpu", "2"), Used: rl("cpu", used, "nvidia.com/gpu", "1"), Counted: true}
	}
	a := applied{read: true, generation: 1, ok: true, reason: reasonApplied, message: "spec applied"}
	sb := &v1alpha1.SliceBudget{}

	sb.Status = desiredStatus(sb, a, counted("16", "12"), cohortView{}, t0)
	c := meta.FindStatusCondition(sb.Status.Conditions, conditionCapacityBelowUsed)
	require.NotNil(t, c, "written False when not below")
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, reasonWithinCapacity, c.Reason)

	t1 := t0.Add(time.Minute)
	sb.Status = desiredStatus(sb, a, counted("8", "12"), cohortView{}, t1)
	c = meta.FindStatusCondition(sb.Status.Conditions, conditionCapacityBelowUsed)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, reasonUsedExceedsCapacity, c.Reason)
	assert.Contains(t, c.Message, "cpu 12 held of 8")
	assert.NotContains(t, c.Message, "nvidia.com/gpu", "only the resources below are named")
	assert.True(t, c.LastTransitionTime.Time.Equal(t1))

	// The figures move, the state holds: the condition is what it was.
	before := *c
	a.generation = 2
	st := desiredStatus(sb, a, counted("6", "11"), cohortView{}, t1.Add(time.Minute))
	c = meta.FindStatusCondition(st.Conditions, conditionCapacityBelowUsed)
	before.ObservedGeneration = 2
	assert.Equal(t, before, *c, "only observedGeneration follows the spec")
	sb.Status = st

	t2 := t1.Add(time.Hour)
	sb.Status = desiredStatus(sb, a, counted("20", "11"), cohortView{}, t2)
	c = meta.FindStatusCondition(sb.Status.Conditions, conditionCapacityBelowUsed)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.True(t, c.LastTransitionTime.Time.Equal(t2))

	// Books not counted yet: the condition is left as shown.
	st = desiredStatus(sb, a, ledger.Snapshot{Total: rl("cpu", "1"), Used: rl("cpu", "11")}, cohortView{}, t2.Add(time.Hour))
	assert.Equal(t, sb.Status.Conditions, st.Conditions)
}

// status.cohortMembers: written for a member of a cohort only, sorted,
// itself included even before the manager lists it, each name once, at
// most maxCohortMembers.
func TestDesiredStatusCohortMembers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sb := &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: "spot"}}
	a := applied{read: true, ok: true, reason: reasonApplied, generation: 1}
	alone := ledger.Snapshot{Total: cpuRL("1"), Used: cpuRL("0"), Counted: true}
	self := memberFigures{name: "spot", total: cpuRL("1"), used: cpuRL("0")}
	gold := memberFigures{name: "gold", total: cpuRL("4"), used: cpuRL("0")}
	assert.Nil(t, desiredStatus(sb, a, alone, cohortView{}, t0).CohortMembers, "a budget in no cohort lists none")
	member := alone
	member.Cohort = "tiers"
	assert.Equal(t, []string{"gold", "spot"}, desiredStatus(sb, a, member, viewOf("tiers", self, []memberFigures{self, gold, gold}), t0).CohortMembers)
	assert.Equal(t, []string{"spot"}, desiredStatus(sb, a, member, viewOf("tiers", self, nil), t0).CohortMembers, "a cohort of one shows itself")
	assert.Equal(t, []string{"spot"}, desiredStatus(sb, a, member, cohortView{}, t0).CohortMembers, "itself before the manager lists it")
	var many []memberFigures
	for i := range 2 * maxCohortMembers {
		many = append(many, memberFigures{name: fmt.Sprintf("b%03d", i)})
	}
	got := desiredStatus(sb, a, member, viewOf("tiers", self, many), t0).CohortMembers
	assert.Len(t, got, maxCohortMembers, "bounded as the CRD bounds it")
	assert.Equal(t, "b000", got[0])
}

// A member of a cohort shows CapacityBelowUsed only beyond its cohort's
// terms (reason CohortOverCommitted, the message naming the cohort and
// the figures): past its total and borrowing limit, or with the members
// past their totals together; borrowing within them is no shortfall.
func TestDesiredStatusCohortOverCommitted(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sb := &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: "spot"}}
	a := applied{read: true, ok: true, reason: reasonApplied, generation: 1}
	gold := memberFigures{name: "gold", total: cpuRL("10"), used: cpuRL("0")}
	cases := map[string]struct {
		reason     string
		spot       memberFigures
		gold       memberFigures
		wantReason string
		wantIn     []string
	}{
		"Borrowing": {reason: "Spot holds 8 of its 2, within 2 + 10 and the cohort's 12: borrowing, not over.",
			spot: memberFigures{name: "spot", total: cpuRL("2"), used: cpuRL("8"), borrowing: cpuRL("10")}, gold: gold, wantReason: reasonWithinCapacity},
		"NoBorrowingLimit": {reason: "No borrowing limit: spot may hold all the cohort leaves idle.",
			spot: memberFigures{name: "spot", total: cpuRL("2"), used: cpuRL("8")}, gold: gold, wantReason: reasonWithinCapacity},
		"OverItsBorrowingLimit": {reason: "The limit cut to 2 while spot holds 8: over its 4.",
			spot: memberFigures{name: "spot", total: cpuRL("2"), used: cpuRL("8"), borrowing: cpuRL("2")}, gold: gold,
			wantReason: reasonCohortOverCommitted, wantIn: []string{"budget spot holds cpu 8, above its total 2 and borrowing limit 2 in cohort tiers"}},
		"CohortOverItsTotals": {reason: "Gold cut to 2 while spot holds 8: 8 held of the members' 4.",
			spot:       memberFigures{name: "spot", total: cpuRL("2"), used: cpuRL("8"), borrowing: cpuRL("10")},
			gold:       memberFigures{name: "gold", total: cpuRL("2"), used: cpuRL("0")},
			wantReason: reasonCohortOverCommitted, wantIn: []string{"cohort tiers holds cpu 8, above its members' totals 4"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := ledger.Snapshot{Cohort: "tiers", Total: tc.spot.total, Used: tc.spot.used, Counted: true}
			st := desiredStatus(sb, a, snap, viewOf("tiers", tc.spot, []memberFigures{tc.gold}), t0)
			c := meta.FindStatusCondition(st.Conditions, conditionCapacityBelowUsed)
			require.NotNil(t, c, tc.reason)
			assert.Equal(t, tc.wantReason, c.Reason, tc.reason)
			assert.Equal(t, tc.wantReason != reasonWithinCapacity, c.Status == metav1.ConditionTrue, tc.reason)
			for _, w := range tc.wantIn {
				assert.Contains(t, c.Message, w, tc.reason)
			}
		})
	}
}
