package slicetest_test

import (
	"context"
	"errors"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// asked grants every slice what it asks.
var asked = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
})

func cpuBudget(t *testing.T, total string, opts ...budget.Option) *budget.Budget {
	t.Helper()
	b, err := budget.New("shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(total)}, opts...)
	require.NoError(t, err)
	return b
}

// holding is a slice of class that already holds cpu, as a controller
// before a restart left it.
func holding(name, class, cpu string) *authv1beta1.ResourceSlice {
	rs := slicetest.NewSlice(name, slicetest.WithClass(class), slicetest.WithRequest("cpu", cpu),
		slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Granted"))
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	return rs
}

func assertCPU(t *testing.T, want string, got corev1.ResourceList, msg string) {
	t.Helper()
	q := got[corev1.ResourceCPU]
	assert.True(t, q.Equal(resource.MustParse(want)), "%s: want %s CPU, got %s", msg, want, q.String())
}

func TestSharedBudgetCountsTheOtherClassesSlices(t *testing.T) {
	cases := map[string]struct {
		reason      string
		serveSilver bool
		want        authv1beta1.ResourceSliceConditionStatus
	}{
		"silver served, drawing from the budget": {
			reason:      "the seeded silver slice holds 8 of 10 CPU: gold's 4 do not fit",
			serveSilver: true,
			want:        authv1beta1.ResourceSliceConditionDenied,
		},
		"silver not served": {
			reason: "a class that draws from no budget of this manager is not counted (as in production)",
			want:   authv1beta1.ResourceSliceConditionAccepted,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := cpuBudget(t, "10")
			silver := holding("silver-1", "silver", "8")
			gold := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))
			opts := []slicetest.Option{slicetest.WithObjects(silver, gold),
				slicetest.WithReconcilerOptions(resourceslice.WithBudget(b))}
			if tc.serveSilver {
				opts = append(opts, slicetest.WithAnotherClass("silver", asked, resourceslice.WithBudget(b)))
			}
			h := slicetest.New(t, "gold", asked, opts...)

			res := h.Reconcile(gold)
			require.NoError(t, res.Err)
			require.Equal(t, tc.want, res.Decision, tc.reason)
			if tc.want == authv1beta1.ResourceSliceConditionDenied {
				assert.Equal(t, budget.ReasonExhausted, res.Reason)
				assert.Equal(t, "budget shared: cpu: asked 4, waits until 4 is free", res.Message)
			}
		})
	}
}

func TestHarnessReconcilesASliceWithItsClass(t *testing.T) {
	b := cpuBudget(t, "10")
	silver := slicetest.NewSlice("silver-1", slicetest.WithClass("silver"), slicetest.WithRequest("cpu", "6"))
	gold := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	deny := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Deny(rs, "SilverNeverGrants", "")
		return ctrl.Result{}, nil
	})
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(silver, gold),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(b)),
		slicetest.WithAnotherClass("silver", deny, resourceslice.WithBudget(b)))

	res := h.Reconcile(silver)
	require.NoError(t, res.Err)
	assert.Equal(t, "SilverNeverGrants", res.Reason, "silver's handler decides silver's slice")
	res = h.Reconcile(gold)
	require.NoError(t, res.Err)
	assert.Equal(t, "Granted", res.Reason, "gold's handler decides gold's slice")
	assertCPU(t, "4", b.Free(), "gold holds 6 of 10")
}

func TestTwoPriorityReclaim(t *testing.T) {
	b := cpuBudget(t, "10", budget.WithPreemption())
	victim := holding("spot-1", "spot", "8")
	waiter := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "6"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(victim, waiter),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(b), resourceslice.WithPriority(10)),
		slicetest.WithAnotherClass("spot", asked, resourceslice.WithBudget(b)))

	first := h.Reconcile(waiter)
	require.NoError(t, first.Err)
	require.NotEqual(t, authv1beta1.ResourceSliceConditionAccepted, first.Decision, "6 CPU are not free before the reclaim")

	byName := map[string]slicetest.Result{}
	for _, r := range h.ReconcilePending() {
		require.NoError(t, r.Err)
		byName[r.Slice.Name] = r
	}
	shrunk, ok := byName["spot-1"]
	require.True(t, ok, "the reclaim queues the victim")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, shrunk.Decision, "a reclaimed slice stays Accepted")
	assert.Equal(t, budget.ReasonReclaimed, shrunk.Reason)
	assertCPU(t, "4", shrunk.Resources, "the victim keeps what the waiter does not need")
	admitted, ok := byName["gold-1"]
	require.True(t, ok, "the victim's shrink wakes the waiter")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, admitted.Decision, "%s: %s", admitted.Reason, admitted.Message)
	assertCPU(t, "6", admitted.Resources, "the waiter gets what it asked")
}

func TestLostAnswerIsSettled(t *testing.T) {
	cases := map[string]struct {
		reason  string
		err     error
		applied bool
	}{
		"no answer, not applied": {
			reason: "a cut connection: settled once the server's request timeout has passed",
			err:    errors.New("connection reset by peer"),
		},
		"an error answer, not applied": {
			reason: "a 503: settled by one read",
			err:    apierrors.NewServiceUnavailable("the API server is shutting down"),
		},
		"applied, answer lost": {
			reason:  "the watch shows the write: the grant counts as the slice's",
			err:     slicetest.AnswerLost(nil),
			applied: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := cpuBudget(t, "4")
			a := slicetest.NewSlice("a", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "3"))
			other := slicetest.NewSlice("b", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "3"))
			h := slicetest.New(t, "gold", asked, slicetest.WithObjects(a, other),
				slicetest.WithReconcilerOptions(resourceslice.WithBudget(b)),
				slicetest.WithStatusWriteErrors(tc.err))

			res := h.Reconcile(a)
			require.Error(t, res.Err, "the write's error is returned: retried with backoff")
			assertCPU(t, "3", b.Used(), "until settled, the write may have been applied: its offer counts")

			h.ReadBackUnansweredWrites(b)
			if tc.applied {
				assertCPU(t, "3", b.Used(), tc.reason)
				assert.Equal(t, budget.ReasonExhausted, h.Reconcile(other).Reason)
				return
			}
			assertCPU(t, "0", b.Used(), tc.reason)
			res = h.Reconcile(other)
			require.NoError(t, res.Err)
			assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "the settled offer is free again: %s", res.Message)
		})
	}
}

func TestReconcilePendingFollowsTheWatch(t *testing.T) {
	h := slicetest.New(t, "gold", asked)
	rs := slicetest.NewSlice("late", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "1"))
	require.NoError(t, h.Client.Create(context.Background(), rs))

	got := h.ReconcilePending()
	require.Len(t, got, 1, "the create event queues the slice once")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, got[0].Decision)
	assert.Empty(t, h.ReconcilePending(), "the controller's own status write queues nothing")
}

// releasing grants what is asked and records the slices it releases.
type releasing struct{ released []string }

func (r *releasing) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	return asked.Handle(ctx, rs)
}

func (r *releasing) Release(_ context.Context, key types.NamespacedName) error {
	r.released = append(r.released, key.Name)
	return nil
}

func TestAGoneSliceIsReconciledByItsLastClass(t *testing.T) {
	gold, silver := &releasing{}, &releasing{}
	rs := slicetest.NewSlice("silver-1", slicetest.WithClass("silver"), slicetest.WithRequest("cpu", "1"))
	h := slicetest.New(t, "gold", gold, slicetest.WithObjects(rs), slicetest.WithAnotherClass("silver", silver))
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, h.Reconcile(rs).Decision)

	require.NoError(t, h.Client.Delete(context.Background(), rs))
	require.NoError(t, h.Reconcile(rs).Err)
	assert.Equal(t, []string{"silver-1"}, silver.released, "silver granted it: silver releases it")
	assert.Empty(t, gold.released)
}

// Liqo does not shrink a Quota on a Deny: a slice denied after an
// acceptance still holds what its Quota grants, and the budget counts it.
func TestSeededQuotaCounts(t *testing.T) {
	b := cpuBudget(t, "10")
	denied := slicetest.NewSlice("denied", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "8"),
		slicetest.Decided(authv1beta1.ResourceSliceConditionDenied, "NotNow"))
	denied.UID = "uid-denied"
	quota := &offloadingv1beta1.Quota{
		ObjectMeta: metav1.ObjectMeta{Namespace: denied.Namespace, Name: "denied-quota", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.ResourceSliceKind,
			Name: denied.Name, UID: denied.UID, Controller: ptr.To(true),
		}}},
		Spec: offloadingv1beta1.QuotaSpec{User: "consumer-user", Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
	}
	asking := slicetest.NewSlice("asking", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(denied, quota, asking),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(b)))

	res := h.Reconcile(asking)
	require.NoError(t, res.Err)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, "the Quota still grants 8 of 10: %s", res.Message)

	require.NoError(t, h.Client.Delete(context.Background(), quota))
	res = h.Reconcile(asking)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "once Liqo removes the Quota, the 8 are free: %s", res.Message)
}

// A Tenant drained after a slice was accepted: its watch event queues the
// tenant's slices in every class, and the tenant rule denies them.
func TestADrainedTenantQueuesItsSlices(t *testing.T) {
	ctx := context.Background()
	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)
	gold := slicetest.NewSlice("gold-1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "1"))
	silver := slicetest.NewSlice("silver-1", slicetest.WithClass("silver"), slicetest.WithRequest("cpu", "1"))
	h := slicetest.New(t, "gold", asked, slicetest.WithObjects(tenant, gold, silver), slicetest.WithAnotherClass("silver", asked))
	first := h.ReconcilePending()
	require.Len(t, first, 2, "the seeded slices are queued, each for its class")
	for _, r := range first {
		require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, r.Decision, r.Slice.Name)
	}

	tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	require.NoError(t, h.Client.Update(ctx, tenant))
	got := map[string]string{}
	for _, r := range h.ReconcilePending() {
		got[r.Slice.Name] = string(r.Decision) + "/" + r.Reason
	}
	assert.Equal(t, map[string]string{"gold-1": "Denied/TenantDrained", "silver-1": "Denied/TenantDrained"}, got)
}
