package resourceslice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// budgetEpoch is the creation time of the oldest slice in a budget test;
// the budget re-admits waiting slices oldest first, so tests where order
// matters set creation times explicitly (the fake client sets none).
var budgetEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// budgetedSlice is a slice of class asking for cpu CPU, created s seconds
// after budgetEpoch.
func budgetedSlice(name, class, cpu string, s int) *authv1beta1.ResourceSlice {
	return slicetest.NewSlice(name, slicetest.WithClass(class), slicetest.WithRequest(corev1.ResourceCPU, cpu),
		func(rs *authv1beta1.ResourceSlice) {
			rs.CreationTimestamp = metav1.NewTime(budgetEpoch.Add(time.Duration(s) * time.Second))
		})
}

func cpuBudget(t *testing.T, cpu string) *budget.Budget {
	t.Helper()
	b, err := budget.New("pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)})
	require.NoError(t, err)
	return b
}

// assertUsed checks the CPU the budget counts as used.
func assertUsed(t *testing.T, b *budget.Budget, want, why string) {
	t.Helper()
	got := b.Used()[corev1.ResourceCPU]
	assert.Zero(t, got.Cmp(resource.MustParse(want)), "%s: budget uses %s CPU, want %s", why, got.String(), want)
}

// budgetPolicy accepts what is asked, or offer CPU when set, or denies when
// deny is set. Tests change it between reconciles, on the test goroutine.
type budgetPolicy struct {
	offer string
	deny  bool
}

func (p *budgetPolicy) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if p.deny {
		conditions.Deny(rs, "NotNow", "denied by the policy")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	if p.offer != "" {
		rs.Status.Resources[corev1.ResourceCPU] = resource.MustParse(p.offer)
	}
	conditions.Accept(rs, "Granted", "granted by the policy")
	return ctrl.Result{}, nil
}

// newBudgetHarness serves class with p, drawing from b; opts add objects,
// reconciler options or write errors.
func newBudgetHarness(t *testing.T, class string, p *budgetPolicy, b *budget.Budget, opts ...slicetest.Option) *slicetest.Harness {
	t.Helper()
	return slicetest.New(t, class, p, append([]slicetest.Option{slicetest.WithReconcilerOptions(resourceslice.WithBudget(b))}, opts...)...)
}

// requireAccepted reconciles rs and requires it Accepted.
func requireAccepted(t *testing.T, h *slicetest.Harness, rs *authv1beta1.ResourceSlice) slicetest.Result {
	t.Helper()
	res := h.Reconcile(rs)
	require.NoError(t, res.Err)
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "%s: %s", res.Reason, res.Message)
	return res
}

func TestBudgetReleases(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason string
		// seed changes the slice before it is seeded.
		seed func(*authv1beta1.ResourceSlice)
		// change is what happens between the acceptance and the reconcile
		// that must release.
		change func(t *testing.T, h *slicetest.Harness, p *budgetPolicy, rs *authv1beta1.ResourceSlice)
		// wantReason is the stored decision's reason after the release
		// ("" when the slice is gone or no longer ours to decide).
		wantReason string
		wantUsed   string
	}{
		"Deleted": {
			reason: "A deleted slice gives back what it held.",
			change: func(t *testing.T, h *slicetest.Harness, _ *budgetPolicy, rs *authv1beta1.ResourceSlice) {
				require.NoError(t, h.Client.Delete(ctx, rs))
			},
			wantUsed: "0",
		},
		"BeingDeleted": {
			reason: "A slice being deleted (held by another's finalizer) still holds its grant until it is gone: Liqo's Quota lives as long as the slice.",
			seed:   func(rs *authv1beta1.ResourceSlice) { rs.Finalizers = []string{"liqo.io/test"} },
			change: func(t *testing.T, h *slicetest.Harness, _ *budgetPolicy, rs *authv1beta1.ResourceSlice) {
				require.NoError(t, h.Client.Delete(ctx, rs))
			},
			wantUsed: "3",
		},
		"DeniedByTheHandler": {
			reason: "A denial after an acceptance is not a release: Liqo keeps the Quota and the virtual node, so the grant stays counted.",
			change: func(_ *testing.T, _ *slicetest.Harness, p *budgetPolicy, _ *authv1beta1.ResourceSlice) {
				p.deny = true
			},
			wantReason: "NotNow", wantUsed: "3",
		},
		"DeniedByTheTenantRule": {
			reason: "A slice denied because its Tenant is drained keeps counting its grant: a drain stops new use, it does not shrink Liqo's Quota.",
			change: func(t *testing.T, h *slicetest.Harness, _ *budgetPolicy, _ *authv1beta1.ResourceSlice) {
				require.NoError(t, h.Client.Create(ctx, slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionDrained)))
			},
			wantReason: "TenantDrained", wantUsed: "3",
		},
		"OfferedNothing": {
			reason: "Accepting again with an empty offer is how a policy takes a grant back: the slice then holds nothing.",
			change: func(_ *testing.T, _ *slicetest.Harness, p *budgetPolicy, _ *authv1beta1.ResourceSlice) {
				p.offer = "0"
			},
			wantReason: "Granted", wantUsed: "0",
		},
		"OfferedLess": {
			reason: "A slice offered less holds the smaller offer.",
			change: func(_ *testing.T, _ *slicetest.Harness, p *budgetPolicy, _ *authv1beta1.ResourceSlice) {
				p.offer = "1"
			},
			wantReason: "Granted", wantUsed: "1",
		},
		"LeftTheClass": {
			reason: "A slice moved to another class keeps counting what it held here while the cluster shows it holds it (no class decided it since).",
			change: func(t *testing.T, h *slicetest.Harness, _ *budgetPolicy, rs *authv1beta1.ResourceSlice) {
				var cur authv1beta1.ResourceSlice
				require.NoError(t, h.Client.Get(ctx, client.ObjectKeyFromObject(rs), &cur))
				cur.Spec.Class = "silver"
				require.NoError(t, h.Client.Update(ctx, &cur))
			},
			wantUsed: "3",
		},
		"LeftTheSelector": {
			reason: "A slice that no longer matches the selector keeps counting what it held while the cluster shows it holds it.",
			change: func(t *testing.T, h *slicetest.Harness, _ *budgetPolicy, rs *authv1beta1.ResourceSlice) {
				var cur authv1beta1.ResourceSlice
				require.NoError(t, h.Client.Get(ctx, client.ObjectKeyFromObject(rs), &cur))
				delete(cur.Labels, "liqo.io/replicated")
				require.NoError(t, h.Client.Update(ctx, &cur))
			},
			wantUsed: "3",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := cpuBudget(t, "4")
			p := &budgetPolicy{}
			rs := budgetedSlice("a", "gold", "3", 0)
			if tc.seed != nil {
				tc.seed(rs)
			}
			h := newBudgetHarness(t, "gold", p, b, slicetest.WithObjects(rs))

			requireAccepted(t, h, rs)
			assertUsed(t, b, "3", "after the acceptance")

			tc.change(t, h, p, rs)
			res := h.Reconcile(rs)
			require.NoError(t, res.Err)
			if tc.wantReason != "" {
				assert.Equal(t, tc.wantReason, res.Reason, tc.reason)
			}
			assertUsed(t, b, tc.wantUsed, tc.reason)
		})
	}
}

func TestBudgetConflictReturnsTheReservation(t *testing.T) {
	b := cpuBudget(t, "4")
	a, other := budgetedSlice("a", "gold", "3", 0), budgetedSlice("b", "gold", "3", 1)
	h := newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(a, other),
		slicetest.WithStatusWriteErrors(slicetest.Conflict()))

	res := h.Reconcile(a)
	require.NoError(t, res.Err, "a conflict is retried quietly")
	require.Len(t, res.Writes, 1)
	require.True(t, apierrors.IsConflict(res.Writes[0].Err), "the write was refused")
	assert.Positive(t, res.Result.RequeueAfter, "the conflicted slice is retried")
	assertUsed(t, b, "0", "a refused write returns its reservation")

	requireAccepted(t, h, other)
	res = h.Reconcile(a)
	require.NoError(t, res.Err)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, "the capacity the refused write held went to another slice")
}

func TestBudgetUnknownWriteOutcomeKeepsTheReservation(t *testing.T) {
	b := cpuBudget(t, "4")
	a, other := budgetedSlice("a", "gold", "3", 0), budgetedSlice("b", "gold", "3", 1)
	h := newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(a, other),
		slicetest.WithStatusWriteErrors(apierrors.NewInternalError(errors.New("etcd request timed out"))))

	res := h.Reconcile(a)
	require.Error(t, res.Err, "an API error is retried with backoff")
	require.Len(t, res.Writes, 1)
	require.Empty(t, res.Decision, "the stored slice is still undecided")
	assertUsed(t, b, "3", "the server may have applied the write: the reservation is kept")

	res = h.Reconcile(other)
	require.NoError(t, res.Err)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, "the kept reservation is not handed out twice")

	res = requireAccepted(t, h, a)
	assert.Len(t, res.Writes, 1)
	assertUsed(t, b, "3", "the next successful write settles the reservation, counted once")
}

func TestBudgetUnknownWriteOutcomeSettledWithoutAWrite(t *testing.T) {
	ctx := context.Background()
	b := cpuBudget(t, "4")
	p := &budgetPolicy{}
	a := budgetedSlice("a", "gold", "3", 0)
	h := newBudgetHarness(t, "gold", p, b, slicetest.WithObjects(a),
		slicetest.WithStatusWriteErrors(nil, apierrors.NewInternalError(errors.New("etcd request timed out"))))
	requireAccepted(t, h, a)

	p.offer = "1"
	res := h.Reconcile(a)
	require.Error(t, res.Err)
	assertUsed(t, b, "3", "a shrink of unknown outcome keeps the larger amount")

	// The server had applied it after all: the next reconcile finds the
	// slice as wanted and needs no write, and the budget settles on what
	// the server has.
	var cur authv1beta1.ResourceSlice
	require.NoError(t, h.Client.Get(ctx, client.ObjectKeyFromObject(a), &cur))
	cur.Status.Resources[corev1.ResourceCPU] = resource.MustParse("1")
	require.NoError(t, h.Client.Status().Update(ctx, &cur))

	res = requireAccepted(t, h, a)
	assert.Empty(t, res.Writes)
	assertUsed(t, b, "1", "settled on the applied shrink")
}

func TestBudgetExhausted(t *testing.T) {
	cases := map[string]struct {
		reason     string
		mode       resourceslice.DecisionEvents
		wantEvents []string
	}{
		"AllEvents": {
			reason: "A budget denial is a Warning event with the budget's reason.",
			mode:   resourceslice.DecisionEventsAll, wantEvents: []string{"Warning/" + budget.ReasonExhausted},
		},
		"DeniedEvents": {
			reason: "Denials only: a budget denial is still recorded.",
			mode:   resourceslice.DecisionEventsDenied, wantEvents: []string{"Warning/" + budget.ReasonExhausted},
		},
		"NoEvents": {
			reason: "No decision events: the condition alone says why.",
			mode:   resourceslice.DecisionEventsNone,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := cpuBudget(t, "3")
			a, big := budgetedSlice("a", "gold", "2", 0), budgetedSlice("big", "gold", "2", 1)
			h := newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(a, big),
				slicetest.WithReconcilerOptions(resourceslice.WithDecisionEvents(tc.mode)))
			requireAccepted(t, h, a)

			res := h.Reconcile(big)
			require.NoError(t, res.Err, "a budget denial is a decision, not an error")
			assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
			assert.Equal(t, budget.ReasonExhausted, res.Reason)
			assert.Contains(t, res.Message, "cpu: asked 2, waits until 2 is free", "the message names the short resource, what was asked and what is free")
			assert.Contains(t, res.Message, "pool", "the message names the budget")
			assert.Empty(t, res.Resources, "a denied slice is offered nothing")
			assert.Len(t, res.Writes, 1)
			assertUsed(t, b, "2", "the denied offer holds nothing")

			var got []string
			for _, e := range res.Events {
				got = append(got, e.Type+"/"+e.Reason)
				assert.Equal(t, res.Message, e.Note, "the event says what the condition says")
			}
			assert.Equal(t, tc.wantEvents, got, tc.reason)
		})
	}
}

func TestBudgetLimitsOnlyItsResources(t *testing.T) {
	b := cpuBudget(t, "4")
	rs := slicetest.NewSlice("a", slicetest.WithClass("gold"),
		slicetest.WithRequest(corev1.ResourceCPU, "1"), slicetest.WithRequest(corev1.ResourceMemory, "1Ti"))
	h := newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(rs))

	res := requireAccepted(t, h, rs)
	mem := res.Resources[corev1.ResourceMemory]
	assert.Equal(t, "1Ti", mem.String(), "memory is not limited by a CPU budget")
	_, counted := b.Used()[corev1.ResourceMemory]
	assert.False(t, counted, "a budget reports only what it limits")
}

func TestBudgetSharedByTwoClasses(t *testing.T) {
	ctx := context.Background()
	b := cpuBudget(t, "4")
	g, s := budgetedSlice("g", "gold", "3", 0), budgetedSlice("s", "silver", "2", 1)
	// One manager: a budget counts the slices of one manager's classes.
	h := newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(g, s),
		slicetest.WithAnotherClass("silver", &budgetPolicy{}, resourceslice.WithBudget(b)))

	requireAccepted(t, h, g)
	res := h.Reconcile(s)
	require.NoError(t, res.Err)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, "silver sees what gold holds")
	assert.Contains(t, res.Message, "cpu: asked 2, waits until 2 is free")

	require.NoError(t, h.Client.Delete(ctx, g))
	require.NoError(t, h.Reconcile(g).Err)
	assertUsed(t, b, "0", "gold gave back what it held")

	requireAccepted(t, h, s)
	assertUsed(t, b, "2", "silver holds its offer")

	_, err := resourceslice.NewReconciler(h.Client, "gold", &budgetPolicy{},
		resourceslice.WithBudget(b), resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()))
	require.Error(t, err, "a class attached twice to one budget")
	assert.Contains(t, err.Error(), `class "gold"`)
}

func TestBudgetRebuiltAfterRestart(t *testing.T) {
	before := cpuBudget(t, "4")
	a := budgetedSlice("a", "gold", "3", 0)
	h := newBudgetHarness(t, "gold", &budgetPolicy{}, before, slicetest.WithObjects(a))
	held := requireAccepted(t, h, a).Slice
	require.NotNil(t, held)

	// A new process: a new reconciler and a new, empty budget over what the
	// cluster holds.
	held.ResourceVersion = ""
	b := cpuBudget(t, "4")
	newcomer := budgetedSlice("b", "gold", "2", 1)
	h = newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(held, newcomer))

	res := h.Reconcile(newcomer)
	require.NoError(t, res.Err)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, "2 fits an empty budget of 4, not the 1 left by what a holds")
	assert.Contains(t, res.Message, "cpu: asked 2, waits until 2 is free")

	res = h.Reconcile(a)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision)
	assert.Empty(t, res.Writes, "an already-admitted slice costs no write after a restart")
	assertUsed(t, b, "3", "a counted once")
}

func TestBudgetReadmitsOldestFirst(t *testing.T) {
	ctx := context.Background()
	b := cpuBudget(t, "4")
	a := budgetedSlice("a", "gold", "4", 0)
	older := budgetedSlice("older", "gold", "3", 1)
	younger := budgetedSlice("younger", "gold", "2", 2)
	h := newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(a, older, younger))
	requireAccepted(t, h, a)
	for _, rs := range []*authv1beta1.ResourceSlice{older, younger} {
		res := h.Reconcile(rs)
		require.NoError(t, res.Err)
		require.Equal(t, budget.ReasonExhausted, res.Reason, rs.Name)
	}
	require.NoError(t, h.Client.Delete(ctx, a))
	require.NoError(t, h.Reconcile(a).Err)

	res := h.Reconcile(younger)
	require.NoError(t, res.Err)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, "the younger slice does not take what is held for the older one")
	assert.Equal(t, "budget pool: cpu: asked 2, waits until 2 is free", res.Message, "promised to the older slice: not free for the younger one")

	requireAccepted(t, h, older)
	assertUsed(t, b, "3", "the older slice took its place")
}

// An applied write whose answer is lost (slicetest.AnswerLost) keeps
// counting until the slice shows it, and is then counted once: the other
// slice waits. (The ledger's tests cover the retry from a stale cache whose
// write conflicts, which the harness's consistent client cannot show.)
func TestBudgetAnswerLost(t *testing.T) {
	b := cpuBudget(t, "4")
	a, other := budgetedSlice("a", "gold", "4", 0), budgetedSlice("b", "gold", "4", 1)
	h := newBudgetHarness(t, "gold", &budgetPolicy{}, b, slicetest.WithObjects(a, other),
		slicetest.WithStatusWriteErrors(slicetest.AnswerLost(nil)))

	res := h.Reconcile(a)
	require.Error(t, res.Err, "a lost answer is retried with backoff")
	require.True(t, apierrors.IsServiceUnavailable(res.Writes[0].Err), "the harness answered 503: %v", res.Writes[0].Err)
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "the server applied the acceptance")
	assertUsed(t, b, "4", "an answer lost counts what the server may have applied")

	res = h.Reconcile(other)
	require.NoError(t, res.Err)
	assert.Equal(t, budget.ReasonExhausted, res.Reason, "b waits: a holds the 4 CPU the server granted")

	res = h.Reconcile(a)
	require.NoError(t, res.Err)
	assert.Empty(t, res.Writes, "the retry finds the decision applied: nothing to write")
	assertUsed(t, b, "4", "counted once")
}

// Budget metrics report the live instance of a name: a budget created anew
// under an existing name (a class's budget changed in a classes file)
// takes over at once, and an instance no class draws from any more never
// shows again: never a stale total.
func TestBudgetMetricsFollowTheLiveBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := func(b *budget.Budget) []resourceslice.Option {
		return []resourceslice.Option{resourceslice.WithBudget(b), resourceslice.WithMetricsRegisterer(reg)}
	}
	totals := func() []float64 {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		var out []float64
		for _, mf := range mfs {
			if mf.GetName() == "sliceclass_budget_total" {
				for _, m := range mf.GetMetric() {
					out = append(out, m.GetGauge().GetValue())
				}
			}
		}
		return out
	}
	cs, err := resourceslice.NewClassSet(unreachableManager(t))
	require.NoError(t, err)
	require.NoError(t, cs.Serve("gold", &budgetPolicy{}, opts(cpuBudget(t, "4"))...))
	assert.Equal(t, []float64{4}, totals())
	require.NoError(t, cs.Serve("silver", &budgetPolicy{}, opts(cpuBudget(t, "16"))...))
	assert.Equal(t, []float64{16}, totals(), "the newest live instance of the name")
	require.NoError(t, cs.Stop(context.Background(), "silver"))
	assert.Equal(t, []float64{4}, totals(), "silver's budget is drawn from no more: gold's, still live, is reported")
	require.NoError(t, cs.Stop(context.Background(), "gold"))
	require.NoError(t, cs.Serve("gold", &budgetPolicy{}, opts(cpuBudget(t, "8"))...))
	assert.Equal(t, []float64{8}, totals(), "one series for budget pool: the live one's total")
}

// A budget that admits nothing new for a cause other than its capacity (a
// missing SliceBudget) refuses with its own reason, not BudgetExhausted: a
// new slice is Denied BudgetUnavailable with a message naming the budget and
// the cause, a Warning event of that reason, and the metric of that reason
// counts it; an Accepted slice asking more keeps its offer, with the same
// reason in its Warning event; nothing is counted as exhausted (issue 42).
func TestUnavailableBudgetHasItsOwnReason(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := cpuBudget(t, "4")
	grown := budgetedSlice("grown", "gold", "2", 0)
	fresh := budgetedSlice("fresh", "gold", "1", 1)
	p := &budgetPolicy{}
	h := newBudgetHarness(t, "gold", p, b, slicetest.WithObjects(grown, fresh),
		slicetest.WithReconcilerOptions(resourceslice.WithMetricsRegisterer(reg)))
	requireAccepted(t, h, grown)
	const cause = `SliceBudget "pool" not found: admits nothing new`
	ledger.Of(b).SetClosed(cause)

	res := h.Reconcile(fresh)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
	assert.Equal(t, budget.ReasonUnavailable, res.Reason)
	assert.Equal(t, "budget pool is unavailable: "+cause, res.Message)
	require.Len(t, res.Events, 1)
	assert.Equal(t, corev1.EventTypeWarning, res.Events[0].Type)
	assert.Equal(t, budget.ReasonUnavailable, res.Events[0].Reason)

	p.offer = "3"
	res = h.Reconcile(grown)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "an unavailable budget revokes nothing")
	assert.Equal(t, "keeps its current offer; the larger one waits: budget pool is unavailable: "+cause, res.Message)
	require.Len(t, res.Events, 1)
	assert.Equal(t, budget.ReasonUnavailable, res.Events[0].Reason)

	assert.Equal(t, 2.0, counterValue(t, reg, "sliceclass_budget_unavailable_total", map[string]string{"class": "gold"}))
	assert.Zero(t, counterValue(t, reg, "sliceclass_budget_exhausted_total", map[string]string{"class": "gold"}), "unavailable is not exhausted")
}

// A cohort member's borrowed and lent capacity are exported as gauges, by
// budget and resource; a budget in no cohort exports neither.
func TestCohortBorrowedAndLentMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	tiers := "tiers"
	gold, err := budget.New("gold", cpu("4"), budget.WithCohort(tiers))
	require.NoError(t, err)
	spot, err := budget.New("spot", cpu("1"), budget.WithCohort(tiers), budget.WithBorrowingLimit(cpu("3")))
	require.NoError(t, err)
	alone := cpuBudget(t, "8")
	s := budgetedSlice("s", "spot", "3", 0)
	h := newBudgetHarness(t, "spot", &budgetPolicy{}, spot, slicetest.WithObjects(s),
		slicetest.WithReconcilerOptions(resourceslice.WithMetricsRegisterer(reg)),
		slicetest.WithAnotherClass("gold", &budgetPolicy{}, resourceslice.WithBudget(gold), resourceslice.WithMetricsRegisterer(reg)),
		slicetest.WithAnotherClass("other", &budgetPolicy{}, resourceslice.WithBudget(alone), resourceslice.WithMetricsRegisterer(reg)))
	requireAccepted(t, h, s)

	gauges := func(name string) map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				out[labels["budget"]+"/"+labels["resource"]] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	assert.Equal(t, map[string]float64{"gold/cpu": 0, "spot/cpu": 2}, gauges("sliceclass_budget_borrowed"),
		"spot holds 3 on a total of 1; the budget in no cohort has no series")
	assert.Equal(t, map[string]float64{"gold/cpu": 2, "spot/cpu": 0}, gauges("sliceclass_budget_lent"), "of gold's")
}
