package soak

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

// The soak's final check, without a cluster: it must tell a slice decided
// as its tenant, class and budget say from one that is not, or whose Liqo
// fields were clobbered; otherwise the soak could not fail.
func TestCheckSlice(t *testing.T) {
	f := newFleet(1, 1)
	record := func(class string, cpu, rev int) sliceRecord {
		return sliceRecord{key: f.reserve().key, class: class, cpu: cpu, rev: rev}
	}
	decided := func(r sliceRecord, status authv1beta1.ResourceSliceConditionStatus, reason string, grantedCPU int64) *authv1beta1.ResourceSlice {
		rs := f.object(&r)
		liqoAuth(rs, r.rev)
		if status == authv1beta1.ResourceSliceConditionAccepted {
			rs.Status.Resources = rs.Spec.Resources.DeepCopy()
			rs.Status.Resources[corev1.ResourceCPU] = *resource.NewQuantity(grantedCPU, resource.DecimalSI)
		}
		sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeResources, status, reason, "")
		return rs
	}
	active, drained, cordoned := authv1beta1.TenantConditionActive, authv1beta1.TenantConditionDrained, authv1beta1.TenantConditionCordoned
	gold, silver3, bronze := record(classGold, 2, 0), record(classSilver, 3, 0), record(classBronze, 1, 3)

	cases := []struct {
		name, reason string
		rs           *authv1beta1.ResourceSlice
		r            sliceRecord
		tenant       authv1beta1.TenantCondition
		ok           bool
	}{
		{"gold granted", "an Active tenant's gold slice gets what it asked", decided(gold, authv1beta1.ResourceSliceConditionAccepted, reasonGranted, 2), gold, active, true},
		{"gold short", "an acceptance must carry what was asked", decided(gold, authv1beta1.ResourceSliceConditionAccepted, reasonGranted, 1), gold, active, false},
		{"silver too large accepted", "silver denies more than silverMaxCPU", decided(silver3, authv1beta1.ResourceSliceConditionAccepted, reasonGranted, 3), silver3, active, false},
		{"silver too large denied", "", decided(silver3, authv1beta1.ResourceSliceConditionDenied, reasonTooLarge, 0), silver3, active, true},
		{"bronze waiting", "a budget may make a bronze slice wait", decided(bronze, authv1beta1.ResourceSliceConditionDenied, budget.ReasonExhausted, 0), bronze, active, true},
		{"gold waiting", "gold has no budget", decided(gold, authv1beta1.ResourceSliceConditionDenied, budget.ReasonExhausted, 0), gold, active, false},
		{"drained accepted", "a Drained tenant's slices lose their grants", decided(gold, authv1beta1.ResourceSliceConditionAccepted, reasonGranted, 2), gold, drained, false},
		{"drained denied", "", decided(gold, authv1beta1.ResourceSliceConditionDenied, "TenantDrained", 0), gold, drained, true},
		{"cordoned keeps", "a Cordoned tenant's decided slices keep their decision", decided(gold, authv1beta1.ResourceSliceConditionAccepted, reasonGranted, 2), gold, cordoned, true},
		{"active still drained", "an Active tenant's slices are decided again", decided(gold, authv1beta1.ResourceSliceConditionDenied, "TenantDrained", 0), gold, active, false},
		{"undecided", "every slice ends decided", f.object(&gold), gold, cordoned, false},
		{"stale rewrite", "the server must hold Liqo's last rewrite", decided(bronze, authv1beta1.ResourceSliceConditionDenied, budget.ReasonExhausted, 0), sliceRecord{key: bronze.key, class: classBronze, cpu: 1, rev: 4}, active, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := checkSlice(tc.rs, tc.r, tc.tenant)
			if tc.ok {
				assert.Empty(t, p, tc.reason)
			} else {
				assert.NotEmpty(t, p, tc.reason)
			}
		})
	}

	t.Run("Liqo fields clobbered", func(t *testing.T) {
		rs := decided(gold, authv1beta1.ResourceSliceConditionAccepted, reasonGranted, 2)
		rs.Status.AuthParams = nil
		assert.Contains(t, checkSlice(rs, gold, active), "authParams gone")
		rs = decided(gold, authv1beta1.ResourceSliceConditionAccepted, reasonGranted, 2)
		rs.Status.Conditions = rs.Status.Conditions[1:] // the Authentication condition is first
		assert.Contains(t, checkSlice(rs, gold, active), "Authentication condition gone")
	})
}

// The fleet keeps its index in step with the live slices, never hands out a
// slice being rewritten twice, and brings back the tenant down longest.
func TestFleet(t *testing.T) {
	f := newFleet(10, 1)
	for range 50 {
		f.add(f.reserve())
	}
	for range 20 {
		require.NotNil(t, f.take())
	}
	require.Equal(t, 30, f.size())
	for i, r := range f.live {
		require.Equal(t, i, f.index[r.key], "index of %s", r.key)
	}

	f = newFleet(10, 1)
	f.add(f.reserve())
	key, rev, ok := f.pick()
	require.True(t, ok)
	assert.Equal(t, 1, rev)
	_, _, ok = f.pick()
	assert.False(t, ok, "a slice being rewritten is not picked again")
	f.rewritten(key, rev, true)
	_, rev, ok = f.pick()
	require.True(t, ok)
	assert.Equal(t, 2, rev)

	f = newFleet(10, 1)
	var down []int
	for range 3 {
		i, to := f.nextFlip(3)
		require.NotEqual(t, authv1beta1.TenantConditionActive, to)
		f.flipped(i, to)
		down = append(down, i)
	}
	i, to := f.nextFlip(3)
	assert.Equal(t, authv1beta1.TenantConditionActive, to)
	assert.Equal(t, down[0], i, "the tenant down longest comes back first")
}

// The flatness verdict ignores the cold start and the warm-up, and breaks
// its bounds on a heap or goroutine count that keeps growing, or a backlog
// that builds up.
func TestJudge(t *testing.T) {
	churn := func(heap func(i int) float64, goroutines func(i int) int, backlog int) []sample {
		ss := []sample{{phase: "initial", heapAlloc: 500 << 20, goroutines: 1000, backlog: 10000}}
		for i := range 12 {
			ss = append(ss, sample{at: time.Duration(i) * time.Minute, phase: "churn", heapAlloc: uint64(heap(i) * (1 << 20)), goroutines: goroutines(i), backlog: backlog})
		}
		return append(ss, sample{phase: "drain", heapAlloc: 900 << 20, goroutines: 5000})
	}
	warm := func(f float64) func(int) float64 {
		return func(i int) float64 {
			if i < 4 {
				return 300 // the warm-up is not judged
			}
			return f
		}
	}
	flat := func(int) int { return 100 }

	v, err := judge(churn(warm(40), flat, 0))
	require.NoError(t, err)
	assert.Empty(t, v.problems())
	assert.InDelta(t, 40, v.first.heapMiB, 0.1)
	assert.InDelta(t, 900, v.peakHeapMiB, 0.1)

	v, err = judge(churn(func(i int) float64 { return 40 + 5*float64(i) }, flat, 0))
	require.NoError(t, err)
	assert.Len(t, v.problems(), 1, "a heap growing by 5 MiB a sample")
	assert.InDelta(t, 5, v.heapSlope, 0.01, "MiB per sample, samples a minute apart")

	v, err = judge(churn(warm(40), func(i int) int { return 100 + 10*i }, 0))
	require.NoError(t, err)
	assert.Len(t, v.problems(), 1, "goroutines growing by 10 a sample")

	v, err = judge(churn(warm(40), flat, backlogBound+1))
	require.NoError(t, err)
	assert.Len(t, v.problems(), 1, "a backlog above the bound")

	_, err = judge(churn(warm(40), flat, 0)[:5])
	assert.Error(t, err, "too few churn samples to judge")
}
