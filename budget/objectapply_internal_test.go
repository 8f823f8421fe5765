package budget

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// appliedLedger is a follower of SliceBudget "gold" over a ledger made as
// FromObject makes it, a spot class attached, and the reclaims its spec's
// edits make, as the Warning events on the object would say them.
type appliedLedger struct {
	f *objectFollower
	l *ledger.Ledger

	mu       sync.Mutex
	reclaims []string
}

func newAppliedLedger(t *testing.T) *appliedLedger {
	t.Helper()
	l, err := ledger.New("gold", corev1.ResourceList{corev1.ResourceCPU: resource.Quantity{}})
	require.NoError(t, err)
	require.NoError(t, l.Attach("spot", ledger.Class{}))
	a := &appliedLedger{f: &objectFollower{ob: &objectBudget{name: "gold", l: l, read: make(chan struct{})}}, l: l}
	l.SetReclaimHook(func(r ledger.Reclaim) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.reclaims = append(a.reclaims, r.String())
	})
	return a
}

// apply applies generation gen of a spec with total CPUs and preemption.
func (a *appliedLedger) apply(gen int64, total string, preemption bool) {
	policy := v1alpha1.PreemptionNever
	if preemption {
		policy = v1alpha1.PreemptionLowerPriority
	}
	sb := &v1alpha1.SliceBudget{Spec: v1alpha1.SliceBudgetSpec{
		Total:      v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse(total)},
		Preemption: &v1alpha1.SliceBudgetPreemption{WithinBudget: policy}}}
	sb.Name, sb.Generation = "gold", gen
	a.f.apply(context.Background(), sb)
}

func (a *appliedLedger) takeReclaims() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.reclaims
	a.reclaims = nil
	return out
}

// capped are the slices of names that yield capacity.
func (a *appliedLedger) capped(names ...string) []string {
	var out []string
	for _, n := range names {
		if _, ok := a.l.Cap(types.NamespacedName{Namespace: "ns", Name: n}); ok {
			out = append(out, n)
		}
	}
	return out
}

// One edit of the spec is one change of the budget: a patch that turns
// preemption on and raises the total reclaims nothing (issue 42, item 4:
// preemption applied before the new total once reclaimed what the old
// total did not cover, and lifted it at once, leaving only a false
// Warning); one that turns it off and lowers the total reclaims nothing
// either; one that turns it on and lowers the total reclaims once, for
// the new total.
func TestOneSpecEditIsOneChange(t *testing.T) {
	type spec struct {
		total      string
		preemption bool
	}
	cases := map[string]struct {
		reason        string
		before, patch spec
		want, capped  []string
	}{
		"PreemptionOnTotalUp": {reason: "16 covers the 16 held: nothing to reclaim.",
			before: spec{"10", false}, patch: spec{"16", true}},
		"PreemptionOffTotalDown": {reason: "without preemption a smaller total revokes nothing.",
			before: spec{"16", true}, patch: spec{"6", false}},
		"PreemptionOnTotalDown": {reason: "12 does not cover the 16 held: 4 are reclaimed, once.",
			before: spec{"10", false}, patch: spec{"12", true},
			want:   []string{"reclaimed cpu 4 from 1 slice: the total fell below what the slices held"},
			capped: []string{"s2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAppliedLedger(t)
			a.apply(1, "16", false)
			for i, n := range []string{"s1", "s2"} {
				a.l.ObserveSlice(ledger.Slice{Key: types.NamespacedName{Namespace: "ns", Name: n}, UID: types.UID(n), RV: "1",
					Class: "spot", Consumer: "globex", Accepted: true, Created: time.Unix(int64(i), 0),
					Grant: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
			}
			// Before the patch: a total the slices may hold more of, as
			// when it was lowered while preemption was off.
			a.apply(2, tc.before.total, tc.before.preemption)
			require.Empty(t, a.takeReclaims(), "set up: nothing reclaimed")
			require.Empty(t, a.capped("s1", "s2"), "set up: nothing capped")

			a.apply(3, tc.patch.total, tc.patch.preemption)
			assert.Equal(t, tc.want, a.takeReclaims(), tc.reason)
			assert.Equal(t, tc.capped, a.capped("s1", "s2"), tc.reason)
			assert.Equal(t, tc.patch.preemption, a.l.Preemption())
			total := a.l.Total()
			assert.True(t, total.Cpu().Equal(resource.MustParse(tc.patch.total)))
		})
	}
}
