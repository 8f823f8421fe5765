package resourceslice_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The lifecycle of issue 9 on the harness: release hooks, bounded handlers
// and dry run. WithWatch passes and inventory sweeps need a manager
// (AddToManager); they are tested on envtest in test/integration.

// labelPolicy is the label a releasingPolicy reads: "deny" makes it deny.
const labelPolicy = "example.com/policy"

// releasingPolicy accepts what a slice asks, unless deny is set or the
// slice is labelled labelPolicy=deny, and records every Release call.
// failReleases makes that many of the next Release calls fail.
type releasingPolicy struct {
	mu           sync.Mutex
	deny         bool
	failReleases int
	attempts     map[types.NamespacedName]int
	released     map[types.NamespacedName]int
}

var (
	_ handler.Handler  = &releasingPolicy{}
	_ handler.Releaser = &releasingPolicy{}
)

func (p *releasingPolicy) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	p.mu.Lock()
	deny := p.deny
	p.mu.Unlock()
	if deny || rs.Labels[labelPolicy] == "deny" {
		conditions.Deny(rs, "PolicyDenied", "denied by the policy")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "granted by the policy")
	return ctrl.Result{}, nil
}

func (p *releasingPolicy) Release(_ context.Context, key types.NamespacedName) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.attempts == nil {
		p.attempts, p.released = map[types.NamespacedName]int{}, map[types.NamespacedName]int{}
	}
	p.attempts[key]++
	if p.failReleases > 0 {
		p.failReleases--
		return errors.New("node pool API unavailable")
	}
	p.released[key]++
	return nil
}

func (p *releasingPolicy) setDeny(deny bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny = deny
}

// releases returns how many Release calls for key succeeded, and how many
// were made.
func (p *releasingPolicy) releases(key types.NamespacedName) (succeeded, attempted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.released[key], p.attempts[key]
}

// totalAttempts counts Release calls for any key.
func (p *releasingPolicy) totalAttempts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.attempts {
		n += c
	}
	return n
}

func keyOf(rs *authv1beta1.ResourceSlice) types.NamespacedName {
	return client.ObjectKeyFromObject(rs)
}

// requireDecision reconciles rs and requires the decision want.
func requireDecision(t *testing.T, h *slicetest.Harness, rs *authv1beta1.ResourceSlice, want authv1beta1.ResourceSliceConditionStatus) slicetest.Result {
	t.Helper()
	res := h.Reconcile(rs)
	require.NoError(t, res.Err)
	require.Equal(t, want, res.Decision, "%s: %s", res.Reason, res.Message)
	return res
}

// changeSlice reads rs from the harness's store, applies change and
// updates the object.
func changeSlice(t *testing.T, h *slicetest.Harness, rs *authv1beta1.ResourceSlice, change func(*authv1beta1.ResourceSlice)) {
	t.Helper()
	var cur authv1beta1.ResourceSlice
	require.NoError(t, h.Client.Get(context.Background(), keyOf(rs), &cur))
	change(&cur)
	require.NoError(t, h.Client.Update(context.Background(), &cur))
}

// counterValue reads one series of a counter vector from reg; 0 when the
// series does not exist.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestReleaseOncePerExit(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason string
		// opts adds objects or options to the harness.
		opts []slicetest.Option
		// exit makes the Accepted slice leave Accepted in this class.
		exit func(t *testing.T, h *slicetest.Harness, p *releasingPolicy, rs *authv1beta1.ResourceSlice)
		// wantDecision is the stored decision after the exit ("" if gone).
		wantDecision authv1beta1.ResourceSliceConditionStatus
	}{
		"Deleted": {
			reason: "A deleted Accepted slice is released once.",
			exit: func(t *testing.T, h *slicetest.Harness, _ *releasingPolicy, rs *authv1beta1.ResourceSlice) {
				require.NoError(t, h.Client.Delete(ctx, rs))
			},
		},
		"DeniedByTheHandler": {
			reason: "An Accepted slice the handler now denies is released once.",
			exit: func(_ *testing.T, _ *slicetest.Harness, p *releasingPolicy, _ *authv1beta1.ResourceSlice) {
				p.setDeny(true)
			},
			wantDecision: authv1beta1.ResourceSliceConditionDenied,
		},
		"DeniedByTheTenantRule": {
			reason: "An Accepted slice whose Tenant is drained is released once.",
			opts:   []slicetest.Option{slicetest.WithObjects(slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionActive))},
			exit: func(t *testing.T, h *slicetest.Harness, _ *releasingPolicy, _ *authv1beta1.ResourceSlice) {
				var tenant authv1beta1.Tenant
				key := types.NamespacedName{Namespace: slicetest.DefaultNamespace, Name: slicetest.DefaultConsumer}
				require.NoError(t, h.Client.Get(ctx, key, &tenant))
				tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
				require.NoError(t, h.Client.Update(ctx, &tenant))
			},
			wantDecision: authv1beta1.ResourceSliceConditionDenied,
		},
		"LeftTheClass": {
			reason: "An Accepted slice moved to another class is released once; its decision is the other class's business.",
			exit: func(t *testing.T, h *slicetest.Harness, _ *releasingPolicy, rs *authv1beta1.ResourceSlice) {
				changeSlice(t, h, rs, func(cur *authv1beta1.ResourceSlice) { cur.Spec.Class = "silver" })
			},
			wantDecision: authv1beta1.ResourceSliceConditionAccepted,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &releasingPolicy{}
			rs := goldSlice("a")
			h := slicetest.New(t, gold, p, append([]slicetest.Option{slicetest.WithObjects(rs)}, tc.opts...)...)
			requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)
			requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)
			_, attempted := p.releases(keyOf(rs))
			require.Zero(t, attempted, "%s\nnothing is released while the slice stays Accepted", tc.reason)

			tc.exit(t, h, p, rs)
			res := h.Reconcile(rs)
			require.NoError(t, res.Err, tc.reason)
			assert.Equal(t, tc.wantDecision, res.Decision, "%s\n%s: %s", tc.reason, res.Reason, res.Message)
			ok, attempted := p.releases(keyOf(rs))
			assert.Equal(t, 1, ok, "%s\nreleases after the exit", tc.reason)
			assert.Equal(t, 1, attempted, "%s\nRelease calls after the exit", tc.reason)

			for range 2 {
				require.NoError(t, h.Reconcile(rs).Err)
			}
			_, attempted = p.releases(keyOf(rs))
			assert.Equal(t, 1, attempted, "%s\nonce per exit, not on every reconcile", tc.reason)
			assert.Equal(t, 1, p.totalAttempts(), "%s\nonly the slice that exited is released", tc.reason)
		})
	}
}

func TestReleaseNeverWithoutAnExit(t *testing.T) {
	ctx := context.Background()
	t.Run("NeverAccepted", func(t *testing.T) {
		p := &releasingPolicy{}
		rs := goldSlice("a", slicetest.WithLabel(labelPolicy, "deny"))
		h := slicetest.New(t, gold, p, slicetest.WithObjects(rs))
		requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionDenied)
		requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionDenied)
		require.NoError(t, h.Client.Delete(ctx, rs))
		require.NoError(t, h.Reconcile(rs).Err)
		assert.Zero(t, p.totalAttempts(), "a slice that was never Accepted holds nothing to release")
	})
	t.Run("NeverAcceptedLeavesTheClass", func(t *testing.T) {
		p := &releasingPolicy{}
		rs := goldSlice("a", slicetest.WithLabel(labelPolicy, "deny"))
		h := slicetest.New(t, gold, p, slicetest.WithObjects(rs))
		requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionDenied)
		changeSlice(t, h, rs, func(cur *authv1beta1.ResourceSlice) { cur.Spec.Class = "silver" })
		require.NoError(t, h.Reconcile(rs).Err)
		assert.Zero(t, p.totalAttempts(), "a Denied slice leaving the class holds nothing to release")
	})
	t.Run("PlainReconciles", func(t *testing.T) {
		p := &releasingPolicy{}
		rs := goldSlice("a")
		h := slicetest.New(t, gold, p, slicetest.WithObjects(rs))
		for range 3 {
			requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)
		}
		changeSlice(t, h, rs, func(cur *authv1beta1.ResourceSlice) { cur.Labels["unrelated"] = "change" })
		requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)
		assert.Zero(t, p.totalAttempts(), "re-deciding an Accepted slice Accepted is no exit")
	})
	t.Run("GrowthThatDoesNotFitTheBudget", func(t *testing.T) {
		p := &releasingPolicy{}
		rs := goldSlice("a")
		h := slicetest.New(t, gold, p, slicetest.WithObjects(rs),
			slicetest.WithReconcilerOptions(resourceslice.WithBudget(cpuBudget(t, "4"))))
		requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)
		changeSlice(t, h, rs, func(cur *authv1beta1.ResourceSlice) {
			cur.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("8")
		})
		res := requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)
		assert.Contains(t, res.Message, "keeps its current offer", "the growth waits")
		assert.Zero(t, p.totalAttempts(), "an Accepted slice asking for more than is free keeps its offer: no exit")
	})
	t.Run("OtherSlicesExit", func(t *testing.T) {
		p := &releasingPolicy{}
		a, b := goldSlice("a"), goldSlice("b")
		h := slicetest.New(t, gold, p, slicetest.WithObjects(a, b))
		requireDecision(t, h, a, authv1beta1.ResourceSliceConditionAccepted)
		requireDecision(t, h, b, authv1beta1.ResourceSliceConditionAccepted)
		require.NoError(t, h.Client.Delete(ctx, b))
		require.NoError(t, h.Reconcile(b).Err)
		requireDecision(t, h, a, authv1beta1.ResourceSliceConditionAccepted)
		_, attempted := p.releases(keyOf(a))
		assert.Zero(t, attempted, "a's neighbour leaving does not release a")
		_, attempted = p.releases(keyOf(b))
		assert.Equal(t, 1, attempted, "b left and is released")
	})
}

func TestReleaseErrorIsRetriedUntilItSucceeds(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason string
		exit   func(t *testing.T, h *slicetest.Harness, p *releasingPolicy, rs *authv1beta1.ResourceSlice)
	}{
		"Deleted": {
			reason: "The release of a deleted slice is retried while the slice is gone.",
			exit: func(t *testing.T, h *slicetest.Harness, _ *releasingPolicy, rs *authv1beta1.ResourceSlice) {
				require.NoError(t, h.Client.Delete(ctx, rs))
			},
		},
		"DeniedByTheHandler": {
			reason: "The release of a denied slice is retried though the denial is already written.",
			exit: func(_ *testing.T, _ *slicetest.Harness, p *releasingPolicy, _ *authv1beta1.ResourceSlice) {
				p.setDeny(true)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			p := &releasingPolicy{}
			rs := goldSlice("a")
			h := slicetest.New(t, gold, p, slicetest.WithObjects(rs),
				slicetest.WithReconcilerOptions(resourceslice.WithMetricsRegisterer(reg)))
			requireDecision(t, h, rs, authv1beta1.ResourceSliceConditionAccepted)

			p.mu.Lock()
			p.failReleases = 2
			p.mu.Unlock()
			tc.exit(t, h, p, rs)
			for i := 1; i <= 2; i++ {
				res := h.Reconcile(rs)
				require.Error(t, res.Err, "%s\nreconcile %d: a failed Release is an error, so it is retried with backoff", tc.reason, i)
				assert.False(t, errors.Is(res.Err, reconcile.TerminalError(nil)), "%s\na failed Release is retried, not terminal", tc.reason)
				assert.Contains(t, res.Err.Error(), "node pool API unavailable", tc.reason)
				assert.Contains(t, res.Err.Error(), `class "gold"`, tc.reason)
				_, attempted := p.releases(keyOf(rs))
				assert.Equal(t, i, attempted, "%s\nRelease calls after reconcile %d", tc.reason, i)
			}
			require.NoError(t, h.Reconcile(rs).Err, tc.reason)
			ok, attempted := p.releases(keyOf(rs))
			assert.Equal(t, 1, ok, "%s\nthe third Release succeeded", tc.reason)
			assert.Equal(t, 3, attempted, tc.reason)

			require.NoError(t, h.Reconcile(rs).Err, tc.reason)
			_, attempted = p.releases(keyOf(rs))
			assert.Equal(t, 3, attempted, "%s\nonce it succeeded, Release is not called again", tc.reason)
			assert.Equal(t, 2.0, counterValue(t, reg, "sliceclass_handler_errors_total", map[string]string{"class": gold, "kind": "release"}),
				"%s\nfailed releases are counted", tc.reason)
		})
	}
}

func TestDryRunNeverReleases(t *testing.T) {
	ctx := context.Background()
	p := &releasingPolicy{}
	held := goldSlice("held", slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Granted"))
	gone := goldSlice("gone", slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Granted"))
	h := slicetest.New(t, gold, p, slicetest.WithObjects(held, gone),
		slicetest.WithReconcilerOptions(resourceslice.WithDryRun()))
	require.NoError(t, h.Reconcile(held).Err)
	require.NoError(t, h.Reconcile(gone).Err)

	p.setDeny(true)
	res := h.Reconcile(held)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "a dry run writes no denial")
	require.NoError(t, h.Client.Delete(ctx, gone))
	require.NoError(t, h.Reconcile(gone).Err)
	assert.Zero(t, p.totalAttempts(), "a dry run never calls the release hook")
}

// A restarted reconciler over the stored objects knows which slices its
// predecessor accepted.
func TestReleaseAfterRestart(t *testing.T) {
	ctx := context.Background()
	// restarted decides a and other with a first reconciler, and returns a
	// second one, over the same stored objects, as a new process would see
	// them.
	restarted := func(t *testing.T) (*slicetest.Harness, *releasingPolicy, *authv1beta1.ResourceSlice, *authv1beta1.ResourceSlice) {
		t.Helper()
		a, other := goldSlice("a"), goldSlice("other")
		first := slicetest.New(t, gold, &releasingPolicy{}, slicetest.WithObjects(a, other))
		storedA := requireDecision(t, first, a, authv1beta1.ResourceSliceConditionAccepted).Slice
		storedOther := requireDecision(t, first, other, authv1beta1.ResourceSliceConditionAccepted).Slice
		storedA.ResourceVersion, storedOther.ResourceVersion = "", ""
		p := &releasingPolicy{}
		return slicetest.New(t, gold, p, slicetest.WithObjects(storedA, storedOther)), p, a, other
	}

	t.Run("SeededFromTheStore", func(t *testing.T) {
		h, p, a, other := restarted(t)
		res := requireDecision(t, h, other, authv1beta1.ResourceSliceConditionAccepted)
		assert.Empty(t, res.Writes, "the restarted reconciler finds other decided")
		require.NoError(t, h.Client.Delete(ctx, a))
		require.NoError(t, h.Reconcile(a).Err)
		ok, attempted := p.releases(keyOf(a))
		assert.Equal(t, 1, ok, "a, Accepted before the restart and deleted after it, is released")
		assert.Equal(t, 1, attempted)
	})
	t.Run("ReconciledAgainFirst", func(t *testing.T) {
		h, p, a, _ := restarted(t)
		requireDecision(t, h, a, authv1beta1.ResourceSliceConditionAccepted)
		p.setDeny(true)
		requireDecision(t, h, a, authv1beta1.ResourceSliceConditionDenied)
		ok, _ := p.releases(keyOf(a))
		assert.Equal(t, 1, ok, "a, Accepted before the restart and denied after it, is released")
	})
}

func TestMaxRetries(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("capacity service down")
	cases := map[string]struct {
		reason string
		change func(t *testing.T, h *slicetest.Harness, rs *authv1beta1.ResourceSlice)
	}{
		"LabelChanged": {
			reason: "A label change is a relevant change: the slice is tried again.",
			change: func(t *testing.T, h *slicetest.Harness, rs *authv1beta1.ResourceSlice) {
				changeSlice(t, h, rs, func(cur *authv1beta1.ResourceSlice) { cur.Labels["retry"] = "please" })
			},
		},
		"AuthenticationMessageChanged": {
			reason: "Liqo rewriting the Authentication condition is a relevant change: the slice is tried again.",
			change: func(t *testing.T, h *slicetest.Harness, rs *authv1beta1.ResourceSlice) {
				var cur authv1beta1.ResourceSlice
				require.NoError(t, h.Client.Get(ctx, keyOf(rs), &cur))
				c := conditions.Get(&cur, authv1beta1.ResourceSliceConditionTypeAuthentication)
				require.NotNil(t, c, "precondition: the slice is authenticated")
				c.Message = "re-authenticated"
				require.NoError(t, h.Client.Status().Update(ctx, &cur))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			var calls atomic.Int32
			failing := handler.Func(func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				calls.Add(1)
				return ctrl.Result{}, boom
			})
			rs := goldSlice("a")
			h := slicetest.New(t, gold, failing, slicetest.WithObjects(rs),
				slicetest.WithReconcilerOptions(resourceslice.WithMaxRetries(3), resourceslice.WithMetricsRegisterer(reg)))

			for i := 1; i <= 2; i++ {
				res := h.Reconcile(rs)
				require.Error(t, res.Err, "failure %d of 3 is retried", i)
				assert.Equal(t, []string{"Warning/" + "HandlerFailed"}, reasons(res.Events))
			}
			res := h.Reconcile(rs)
			require.NoError(t, res.Err, "the third consecutive failure gives up: no error, no retry")
			assert.Equal(t, ctrl.Result{}, res.Result, "no requeue after giving up (no resync period)")
			assert.Equal(t, []string{"Warning/HandlerFailed", "Warning/GaveUp"}, reasons(res.Events))
			for _, e := range res.Events {
				if e.Reason == "GaveUp" {
					assert.Contains(t, e.Note, "capacity service down", "the GaveUp event says what the handler answered")
				}
			}
			assert.Equal(t, 1.0, counterValue(t, reg, "sliceclass_handler_gave_up_total", map[string]string{"class": gold}))

			for range 3 {
				res := h.Reconcile(rs)
				require.NoError(t, res.Err)
				assert.Empty(t, res.Events, "a slice given up on stays quiet")
			}
			assert.Equal(t, int32(3), calls.Load(), "the handler was called exactly 3 times")

			tc.change(t, h, rs)
			res = h.Reconcile(rs)
			assert.Error(t, res.Err, "%s\nthe handler fails again and the error is retried", tc.reason)
			assert.Equal(t, int32(4), calls.Load(), tc.reason)

			// The count starts again: two more failures give up again.
			assert.Error(t, h.Reconcile(rs).Err, tc.reason)
			res = h.Reconcile(rs)
			assert.NoError(t, res.Err, tc.reason)
			assert.Contains(t, reasons(res.Events), "Warning/GaveUp", tc.reason)
			assert.Equal(t, int32(6), calls.Load(), tc.reason)
			assert.NoError(t, h.Reconcile(rs).Err)
			assert.Equal(t, int32(6), calls.Load(), "%s\ngiven up again until the next change", tc.reason)
		})
	}
}

func TestMaxRetriesCountsOnlyFailuresInARow(t *testing.T) {
	var fail atomic.Bool
	var calls atomic.Int32
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		calls.Add(1)
		if fail.Load() {
			return ctrl.Result{}, errors.New("flaky backend")
		}
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	rs := goldSlice("a")
	hs := slicetest.New(t, gold, h, slicetest.WithObjects(rs), slicetest.WithReconcilerOptions(resourceslice.WithMaxRetries(3)))
	fail.Store(true)
	require.Error(t, hs.Reconcile(rs).Err)
	require.Error(t, hs.Reconcile(rs).Err)
	fail.Store(false)
	requireDecision(t, hs, rs, authv1beta1.ResourceSliceConditionAccepted)
	fail.Store(true)
	for i := 1; i <= 2; i++ {
		res := hs.Reconcile(rs)
		assert.Error(t, res.Err, "failure %d after a success is retried: the count restarted", i)
		assert.NotContains(t, reasons(res.Events), "Warning/GaveUp")
	}
	assert.Equal(t, int32(5), calls.Load())
}

// reconcileUntilCalled reconciles rs every 20ms until the handler has been
// called want times, and fails the test if that takes longer than
// testwait.Timeout.
func reconcileUntilCalled(t *testing.T, h *slicetest.Harness, rs *authv1beta1.ResourceSlice, calls *atomic.Int32, want int32) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, testwait.Timeout, true, func(context.Context) (bool, error) {
		h.Reconcile(rs)
		return calls.Load() >= want, nil
	})
	require.NoError(t, err, "waiting for handler call %d of %s (got %d)", want, rs.Name, calls.Load())
}

func TestMaxRetriesTriesAgainAtTheResyncPeriod(t *testing.T) {
	const resync = 200 * time.Millisecond
	var calls atomic.Int32
	failing := handler.Func(func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		calls.Add(1)
		return ctrl.Result{}, errors.New("capacity service down")
	})
	rs := goldSlice("a")
	h := slicetest.New(t, gold, failing, slicetest.WithObjects(rs),
		slicetest.WithReconcilerOptions(resourceslice.WithMaxRetries(2), resourceslice.WithResyncPeriod(resync)))
	require.Error(t, h.Reconcile(rs).Err)
	res := h.Reconcile(rs)
	require.NoError(t, res.Err)
	require.Contains(t, reasons(res.Events), "Warning/GaveUp")
	assert.Equal(t, resync, res.Result.RequeueAfter, "giving up still comes back at the resync period")
	require.NoError(t, h.Reconcile(rs).Err)
	require.Equal(t, int32(2), calls.Load(), "precondition: given up, not called again at once")

	reconcileUntilCalled(t, h, rs, &calls, 3)
}

// lateHandler blocks past its deadline and then accepts: the answer of a
// handler that overran must be discarded. Its first call blocks until
// proceed is closed (3s at most), then answers and closes returned; later
// calls deny at once.
type lateHandler struct {
	proceed, returned chan struct{}
	calls             atomic.Int32
	hadDeadline       atomic.Bool
}

func newLateHandler() *lateHandler {
	return &lateHandler{proceed: make(chan struct{}), returned: make(chan struct{})}
}

func (l *lateHandler) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if l.calls.Add(1) > 1 {
		conditions.Deny(rs, "Prompt", "answered in time")
		return ctrl.Result{}, nil
	}
	_, ok := ctx.Deadline()
	l.hadDeadline.Store(ok)
	<-ctx.Done()
	<-l.proceed // a handler that ignores its deadline
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Late", "answered after the deadline")
	rs.Labels["late"] = "true"
	close(l.returned)
	return ctrl.Result{}, nil
}

// waitClosed waits for ch to be closed, for what, failing the test after
// testwait.Timeout.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testwait.Timeout):
		t.Fatalf("timed out after %s waiting for %s", testwait.Timeout, what)
	}
}

func TestHandlerTimeout(t *testing.T) {
	reg := prometheus.NewRegistry()
	late := newLateHandler()
	rs := goldSlice("a")
	h := slicetest.New(t, gold, late, slicetest.WithObjects(rs),
		slicetest.WithReconcilerOptions(resourceslice.WithHandlerTimeout(100*time.Millisecond), resourceslice.WithMetricsRegisterer(reg)))

	// The handler ignores its deadline and answers when the test lets it:
	// the call is waited for (one call per slice at a time), and its
	// answer, however good, is a timeout.
	const hold = 300 * time.Millisecond
	start := time.Now() // before the timer is armed: elapsed is then at least hold
	time.AfterFunc(hold, func() { close(late.proceed) })
	res := h.Reconcile(rs)
	elapsed := time.Since(start)
	require.Error(t, res.Err, "a handler past its deadline is a failure")
	assert.False(t, errors.Is(res.Err, reconcile.TerminalError(nil)), "an overrun is retried")
	assert.Contains(t, res.Err.Error(), "timed out")
	assert.GreaterOrEqual(t, elapsed, hold, "Reconcile waits for the late call, as controller-runtime's ReconciliationTimeout does")
	waitClosed(t, late.returned, "the late handler to return its answer")
	assert.True(t, late.hadDeadline.Load(), "Handle's context carries the deadline")
	if assert.Len(t, res.Events, 1) {
		e := res.Events[0]
		assert.Equal(t, corev1.EventTypeWarning, e.Type)
		assert.Equal(t, "HandlerFailed", e.Reason)
		assert.Contains(t, e.Note, "timed out")
	}
	assert.Empty(t, res.Writes)
	assert.Empty(t, res.Decision)
	assert.Equal(t, 1.0, counterValue(t, reg, "sliceclass_handler_errors_total", map[string]string{"class": gold, "kind": "timeout"}))
	assert.Equal(t, 0.0, counterValue(t, reg, "sliceclass_handler_errors_total", map[string]string{"class": gold, "kind": "error"}),
		"one failure per timeout: nothing more is counted for the late call")

	var stored authv1beta1.ResourceSlice
	require.NoError(t, h.Client.Get(context.Background(), keyOf(rs), &stored))
	assert.Nil(t, conditions.Get(&stored, authv1beta1.ResourceSliceConditionTypeResources), "the late answer is not written")

	res = h.Reconcile(rs)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision, "the next, prompt answer is the one saved")
	assert.Equal(t, "Prompt", res.Reason)
	require.Len(t, res.Writes, 1)
	assert.NotContains(t, res.Writes[0].Patch, "Late", "nothing of the late answer leaks into the next write")
	assert.NotContains(t, res.Writes[0].Patch, "cpu", "the late offer is not in the next write")
	for _, e := range res.Events {
		assert.NotEqual(t, "Late", e.Reason)
	}
}

func TestHandlerTimeoutLeavesPromptHandlersAlone(t *testing.T) {
	rs := goldSlice("a")
	var hadDeadline atomic.Bool
	h := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		_, ok := ctx.Deadline()
		hadDeadline.Store(ok)
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	hs := slicetest.New(t, gold, h, slicetest.WithObjects(rs),
		slicetest.WithReconcilerOptions(resourceslice.WithHandlerTimeout(5*time.Second)))
	res := requireDecision(t, hs, rs, authv1beta1.ResourceSliceConditionAccepted)
	assert.Len(t, res.Writes, 1)
	assert.Equal(t, "2", res.Resources.Cpu().String(), "an answer within the deadline is saved whole")
	assert.True(t, hadDeadline.Load())
}

func TestDryRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := cpuBudget(t, "4")
	p := &releasingPolicy{}
	small := goldSlice("small")                                                    // 2 CPU
	fits := goldSlice("fits", slicetest.WithRequest(corev1.ResourceCPU, "3"))      // fits alone, not beside small
	tooBig := goldSlice("too-big", slicetest.WithRequest(corev1.ResourceCPU, "8")) // never fits
	denied := goldSlice("denied", slicetest.WithLabel(labelPolicy, "deny"))        // the policy says no
	h := slicetest.New(t, gold, p, slicetest.WithObjects(small, fits, tooBig, denied),
		slicetest.WithReconcilerOptions(resourceslice.WithDryRun(), resourceslice.WithBudget(b), resourceslice.WithMetricsRegisterer(reg)))

	want := map[string]struct {
		reason string // the would-be decision's reason, carried by the DryRun event
		status authv1beta1.ResourceSliceConditionStatus
	}{
		"small":   {"Granted", authv1beta1.ResourceSliceConditionAccepted},
		"fits":    {"Granted", authv1beta1.ResourceSliceConditionAccepted},
		"too-big": {budget.ReasonExhausted, authv1beta1.ResourceSliceConditionDenied},
		"denied":  {"PolicyDenied", authv1beta1.ResourceSliceConditionDenied},
	}
	for _, rs := range []*authv1beta1.ResourceSlice{small, fits, tooBig, denied} {
		res := h.Reconcile(rs)
		require.NoError(t, res.Err, rs.Name)
		assert.Empty(t, res.Writes, "%s: a dry run writes nothing", rs.Name)
		assert.Empty(t, res.Decision, "%s: the stored slice stays undecided", rs.Name)
		if assert.Len(t, res.Events, 1, rs.Name) {
			e := res.Events[0]
			assert.Equal(t, corev1.EventTypeNormal, e.Type, "%s: a would-be transition is a Normal event, even a denial", rs.Name)
			assert.Equal(t, "DryRun", e.Action, rs.Name)
			assert.Equal(t, want[rs.Name].reason, e.Reason, rs.Name)
			assert.Contains(t, e.Note, string(want[rs.Name].status), rs.Name)
		}
		assertUsed(t, b, "0", rs.Name+": a dry run consults the budget but never charges it")
	}

	for _, c := range []struct {
		outcome string
		want    float64
	}{{"dryrun-accepted", 2}, {"dryrun-denied", 2}, {"accepted", 0}, {"denied", 0}} {
		assert.Equal(t, c.want, counterValue(t, reg, "sliceclass_decisions_total", map[string]string{"class": gold, "outcome": c.outcome}),
			"decisions with outcome %q", c.outcome)
	}
	assert.Zero(t, counterValue(t, reg, "sliceclass_budget_exhausted_total", map[string]string{"class": gold}),
		"nothing was written BudgetExhausted")
}

func TestDryRunNoEventWithoutATransition(t *testing.T) {
	rs := goldSlice("a", func(rs *authv1beta1.ResourceSlice) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "granted by the policy")
	})
	h := slicetest.New(t, gold, &releasingPolicy{}, slicetest.WithObjects(rs),
		slicetest.WithReconcilerOptions(resourceslice.WithDryRun()))
	res := h.Reconcile(rs)
	require.NoError(t, res.Err)
	assert.Empty(t, res.Writes)
	for _, e := range res.Events {
		assert.NotEqual(t, "DryRun", e.Action, "the live decision is what the dry run would write: no would-be transition (%s)",
			strings.TrimSpace(e.Note))
	}
}
