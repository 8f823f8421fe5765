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
	"k8s.io/utils/ptr"

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

// The spec's settings as the ledger takes them (issue 44's shapes):
// preemption.withinBudget LowerPriority and nothing else turns preemption
// on; evictionAfterSeconds is seconds, 0 the least delay (evict as soon
// as seen over), unset none; consumerLimits' entries are the overrides,
// by consumer. A spec the API server would refuse (two entries for one
// consumer, a negative count) is refused here too, changing nothing.
func TestApplySpecSettings(t *testing.T) {
	lower := &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}
	cases := map[string]struct {
		reason      string
		spec        v1alpha1.SliceBudgetSpec
		refused     string // the refusal's message, or "" when applied
		preemption  bool
		evictAfter  time.Duration
		evictAtOnce bool // evictAfter is positive and below a millisecond
		limits      map[string]string
	}{
		"Unset": {reason: "no preemption, no eviction, no overrides",
			spec: v1alpha1.SliceBudgetSpec{}},
		"PreemptionEmpty": {reason: "a policy object not defaulted (written around the API server) is Never",
			spec: v1alpha1.SliceBudgetSpec{Preemption: &v1alpha1.SliceBudgetPreemption{}}},
		"PreemptionNever": {reason: "Never preempts nothing",
			spec: v1alpha1.SliceBudgetSpec{Preemption: &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionNever}}},
		"PreemptionLowerPriority": {reason: "LowerPriority is budget.WithPreemption",
			spec: v1alpha1.SliceBudgetSpec{Preemption: lower}, preemption: true},
		"EvictionAfterSeconds": {reason: "90 seconds is 90s",
			spec: v1alpha1.SliceBudgetSpec{EvictionAfterSeconds: ptr.To[int32](90)}, evictAfter: 90 * time.Second},
		"EvictionAfterZero": {reason: "0 evicts as soon as the pods are seen over, not never",
			spec: v1alpha1.SliceBudgetSpec{EvictionAfterSeconds: ptr.To[int32](0)}, evictAtOnce: true},
		"ConsumerLimits": {reason: "each entry is its consumer's override",
			spec: v1alpha1.SliceBudgetSpec{ConsumerLimits: []v1alpha1.ConsumerLimitOverride{
				{Consumer: "acme", Limits: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("4")}},
				{Consumer: "globex", Limits: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("0")}},
			}},
			limits: map[string]string{"acme": "4", "globex": "0"}},
		"DuplicateConsumer": {reason: "which entry holds is not said: refused, nothing applied",
			spec: v1alpha1.SliceBudgetSpec{Preemption: lower, ConsumerLimits: []v1alpha1.ConsumerLimitOverride{
				{Consumer: "acme", Limits: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("4")}},
				{Consumer: "acme", Limits: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("2")}},
			}},
			refused: `spec.consumerLimits names consumer "acme" twice`},
		"NegativeEvictionAfter": {reason: "a negative count is refused, not read as never",
			spec:    v1alpha1.SliceBudgetSpec{Preemption: lower, EvictionAfterSeconds: ptr.To[int32](-1)},
			refused: "spec.evictionAfterSeconds is -1: it must not be negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAppliedLedger(t)
			sb := &v1alpha1.SliceBudget{Spec: tc.spec}
			sb.Spec.Total = v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("16")}
			sb.Name, sb.Generation = "gold", 1
			a.f.apply(context.Background(), sb)

			got := a.f.ob.getApplied()
			if tc.refused != "" {
				assert.Equal(t, reasonSpecRefused, got.reason, tc.reason)
				assert.Equal(t, tc.refused, got.message, tc.reason)
				assert.False(t, a.l.Preemption(), "%s: nothing applied", tc.reason)
				assert.Empty(t, a.l.ConsumerLimits(), "%s: nothing applied", tc.reason)
				return
			}
			require.Equal(t, reasonApplied, got.reason, "%s: %s", tc.reason, got.message)
			assert.Equal(t, tc.preemption, a.l.Preemption(), tc.reason)
			if tc.evictAtOnce {
				assert.Positive(t, a.l.EvictionAfter(), tc.reason)
				assert.Less(t, a.l.EvictionAfter(), time.Millisecond, tc.reason)
			} else {
				assert.Equal(t, tc.evictAfter, a.l.EvictionAfter(), tc.reason)
			}
			gotLimits := map[string]string{}
			for c, rl := range a.l.ConsumerLimits() {
				gotLimits[c] = rl.Cpu().String()
			}
			if tc.limits == nil {
				tc.limits = map[string]string{}
			}
			assert.Equal(t, tc.limits, gotLimits, tc.reason)
		})
	}
}
