package slicetest_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// cpuSliceBudget is a SliceBudget called name whose spec.total is cpu.
func cpuSliceBudget(name, cpu string) *v1alpha1.SliceBudget {
	return &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}
}

// assertStatus checks the figures of a SliceBudget's status.
func assertStatus(t *testing.T, sb *v1alpha1.SliceBudget, accepted, waiting int32, capacity, used, available string) {
	t.Helper()
	require.NotNil(t, sb, "the SliceBudget exists")
	st := sb.Status
	assert.Equal(t, accepted, st.Accepted, "accepted")
	assert.Equal(t, waiting, st.Waiting, "waiting")
	assertCPU(t, capacity, st.Capacity, "capacity")
	assertCPU(t, used, st.Used, "used")
	assertCPU(t, available, st.Available, "available")
	ready := meta.FindStatusCondition(st.Conditions, "Ready")
	require.NotNil(t, ready, "a Ready condition")
	assert.Equal(t, metav1.ConditionTrue, ready.Status, "the spec is applied: %s", ready.Message)
	assert.Equal(t, sb.Generation, st.ObservedGeneration, "the status says which spec it follows")
}

// The proof, on the fake client: a 10 CPU SliceBudget, slices of 6
// and 6: one accepted, one waiting, 6 used, 4 available; spec.total raised
// to 12 admits the waiter at the next reconcile, and the status says so.
func TestSliceBudgetStatusFollowsDecisionsAndSpec(t *testing.T) {
	s1 := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	s2 := slicetest.NewSlice("s2", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(s1, s2), slicetest.WithSliceBudget(cpuSliceBudget("premium", "10")))

	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, h.Reconcile(s1).Decision)
	res := h.Reconcile(s2)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
	assert.Equal(t, budget.ReasonExhausted, res.Reason)
	assert.Equal(t, "budget premium: cpu: asked 6, waits until 6 is free", res.Message)

	sb := h.SliceBudget("premium")
	assertStatus(t, sb, 1, 1, "10", "6", "4")
	assert.Equal(t, int64(1), sb.Generation, "seeded as the API server creates it")
	require.Len(t, sb.Status.Consumers, 1)
	assert.Equal(t, slicetest.DefaultNamespace, sb.Status.Consumers[0].Name, "the consumer (the namespace, without a cluster-ID label)")
	assertCPU(t, "6", sb.Status.Consumers[0].Used, "the consumer's holding")
	assert.Equal(t, int32(1), sb.Status.Consumers[0].Waiting, "the consumer's waiter")

	// Nothing changed: reading again writes nothing.
	again := h.SliceBudget("premium")
	assert.Equal(t, sb.ResourceVersion, again.ResourceVersion, "an unchanged status is not written again")

	// Raise the total: the follower sees it at the next reconcile, and the
	// waiter is woken and admitted.
	sb.Spec.Total = v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("12")}
	require.NoError(t, h.Client.Update(context.Background(), sb))
	results := h.ReconcilePending()
	require.Len(t, results, 1, "the waiter is queued, and only it")
	assert.Equal(t, "s2", results[0].Slice.Name)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, results[0].Decision)
	assertCPU(t, "6", results[0].Resources, "the waiter's grant")

	sb = h.SliceBudget("premium")
	assert.Equal(t, int64(2), sb.Generation, "a spec change advances the generation, as the API server does")
	assertStatus(t, sb, 2, 0, "12", "12", "0")
}

// A spec edited with a merge patch is followed too, and a status-only
// write leaves the generation alone.
func TestSliceBudgetSpecPatched(t *testing.T) {
	s1 := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(s1), slicetest.WithSliceBudget(cpuSliceBudget("premium", "4")))
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, h.Reconcile(s1).Decision)
	sb := h.SliceBudget("premium")
	assertStatus(t, sb, 0, 1, "4", "0", "4")

	base := sb.DeepCopy()
	sb.Spec.Total = v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("8")}
	require.NoError(t, h.Client.Patch(context.Background(), sb, client.MergeFrom(base)))
	assert.Equal(t, int64(2), sb.Generation, "the patched object carries its new generation")
	results := h.ReconcilePending()
	require.Len(t, results, 1)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, results[0].Decision)
	assertStatus(t, h.SliceBudget("premium"), 1, 0, "8", "6", "2")

	// A metadata-only update is no new generation.
	sb = h.SliceBudget("premium")
	sb.Labels = map[string]string{"team": "gold"}
	require.NoError(t, h.Client.Update(context.Background(), sb))
	assert.Equal(t, int64(2), h.SliceBudget("premium").Generation)
}

// The budget's status writes are not the reconciler's: they take no error
// queued by WithStatusWriteErrors and are in no Result.
func TestSliceBudgetStatusWritesAreNotTheReconcilers(t *testing.T) {
	s1 := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(s1), slicetest.WithSliceBudget(cpuSliceBudget("premium", "10")),
		slicetest.WithStatusWriteErrors(slicetest.Conflict()))
	assertStatus(t, h.SliceBudget("premium"), 0, 0, "10", "0", "10")

	res := h.Reconcile(s1)
	require.Len(t, res.Writes, 1)
	assert.True(t, apierrors.IsConflict(res.Writes[0].Err), "the queued conflict is the slice's: %v", res.Writes[0].Err)
	res = h.Reconcile(s1)
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision)
	for _, w := range res.Writes {
		assert.Equal(t, "s1", w.Object.Name, "only the slice's writes")
	}
	assertStatus(t, h.SliceBudget("premium"), 1, 0, "10", "6", "4")
}

// A deleted SliceBudget admits nothing new, revokes nothing, and its
// waiting slices say why.
func TestSliceBudgetDeleted(t *testing.T) {
	s1 := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "2"))
	s2 := slicetest.NewSlice("s2", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "2"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(s1, s2), slicetest.WithSliceBudget(cpuSliceBudget("premium", "10")))
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, h.Reconcile(s1).Decision)

	require.NoError(t, h.Client.Delete(context.Background(), cpuSliceBudget("premium", "10")))
	assert.Nil(t, h.SliceBudget("premium"), "gone")
	res := h.Reconcile(s2)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
	assert.Equal(t, budget.ReasonUnavailable, res.Reason, "a deleted SliceBudget is not exhausted")
	assert.Equal(t, `budget premium is unavailable: SliceBudget "premium" not found: admits nothing new`, res.Message)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, h.Reconcile(s1).Decision, "what a slice holds is not revoked")

	// Created again, it admits the waiter.
	require.NoError(t, h.Client.Create(context.Background(), cpuSliceBudget("premium", "10")))
	results := h.ReconcilePending()
	require.Len(t, results, 1, "the waiter is woken")
	assert.Equal(t, "s2", results[0].Slice.Name)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, results[0].Decision)
	sb := h.SliceBudget("premium")
	assert.Equal(t, int64(1), sb.Generation, "created as the API server creates it")
	assertStatus(t, sb, 2, 0, "10", "4", "6")
}

// WithSliceBudget's classes: the named ones draw from it, New's alone by
// default, and a reclaim is an event on the SliceBudget.
func TestSliceBudgetSharedByClasses(t *testing.T) {
	sb := cpuSliceBudget("shared", "10")
	sb.Spec.Preemption = &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}
	spot := holding("spot-1", "spot", "8")
	gold := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(spot, gold),
		slicetest.WithReconcilerOptions(resourceslice.WithPriority(10)),
		slicetest.WithAnotherClass("spot", asked),
		slicetest.WithSliceBudget(sb, "gold", "spot"))
	assertStatus(t, h.SliceBudget("shared"), 1, 0, "10", "8", "2")

	first := h.Reconcile(gold)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, first.Decision)
	var reclaims []slicetest.Event
	for _, r := range append([]slicetest.Result{first}, h.ReconcilePending()...) {
		for _, e := range r.Events {
			if e.Object.Name == "shared" {
				reclaims = append(reclaims, e)
			}
		}
	}
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, h.Reconcile(gold).Decision)
	require.Len(t, reclaims, 1, "one reclaim event on the SliceBudget")
	assert.Equal(t, budget.ReasonReclaimed, reclaims[0].Reason)
	// Gold holds 6, spot keeps 4 and waits to grow back to the 8 it asks:
	// an Accepted slice whose larger offer waits is counted Accepted, not
	// waiting (issue 42).
	assertStatus(t, h.SliceBudget("shared"), 2, 0, "10", "10", "0")

	// By default only New's class draws from it.
	other := holding("spot-2", "spot", "8")
	h = slicetest.New(t, "gold", asked, slicetest.WithObjects(other), slicetest.WithAnotherClass("spot", asked),
		slicetest.WithSliceBudget(cpuSliceBudget("gold-only", "10")))
	assertStatus(t, h.SliceBudget("gold-only"), 0, 0, "10", "0", "10")
}

// fatalTB records a Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// newFails runs slicetest.New on a goroutine and returns its Fatalf.
func newFails(t *testing.T, opts ...slicetest.Option) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		slicetest.New(tb, "gold", asked, opts...)
	}()
	<-done
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.fatal
}

func TestWithSliceBudgetRefusesBadSetups(t *testing.T) {
	pool := cpuSliceBudget("pool", "1")
	pool.Spec.Total = nil
	pool.Spec.NodePool = &v1alpha1.NodePool{Selector: &v1alpha1.NodeSelector{}}
	cases := map[string]struct {
		reason string
		opts   []slicetest.Option
		want   string
	}{
		"Nil": {reason: "No SliceBudget to seed.", opts: []slicetest.Option{slicetest.WithSliceBudget(nil)},
			want: "slicetest: WithSliceBudget: nil SliceBudget"},
		"UnknownClass": {reason: "A class the harness does not serve cannot draw.",
			opts: []slicetest.Option{slicetest.WithSliceBudget(cpuSliceBudget("premium", "1"), "spot")},
			want: `slicetest: SliceBudget "premium": class "spot" draws from it, but the harness serves no such class (New, WithAnotherClass)`},
		"Twice": {reason: "One budget per object: two would both write its status.",
			opts: []slicetest.Option{slicetest.WithSliceBudget(cpuSliceBudget("premium", "1")), slicetest.WithSliceBudget(cpuSliceBudget("premium", "2"))},
			want: `slicetest: SliceBudget "premium" given twice (WithSliceBudget)`},
		"NodePool": {reason: "The harness serves no nodes.", opts: []slicetest.Option{slicetest.WithSliceBudget(pool)},
			want: `slicetest: SliceBudget "pool": spec.nodePool is not followed in the harness`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, newFails(t, tc.opts...), tc.want, tc.reason)
		})
	}
}

func TestSliceBudgetUnknownName(t *testing.T) {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		slicetest.New(tb, "gold", asked).SliceBudget("nope")
	}()
	<-done
	assert.Equal(t, `slicetest: SliceBudget "nope": the harness follows no such SliceBudget (WithSliceBudget)`, tb.fatal)
}
