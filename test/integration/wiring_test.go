package integration

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/classhook"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// One wiring path (issue 18): a class wired on a builder of its own, as the
// test kit's harness wires it (internal/classhook), decides exactly as one
// registered with AddToManager, in the same manager, through every input a
// decision depends on: its slices, the tenant rule (Tenant watch), a
// budget's re-admission when capacity frees (the Reconciler's own source),
// and the trusted consumer (namespace watch).
func TestByHandDecidesLikeAddToManager(t *testing.T) {
	cp.Require(t)
	const auto, byHand = "wire-auto", "wire-hand"
	budgets := map[string]*budget.Budget{}
	for _, class := range []string{auto, byHand} {
		b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})
		require.NoError(t, err)
		budgets[class] = b
	}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, auto, accept("Granted", nil),
			resourceslice.WithBudget(budgets[auto]), fastBackoff()); err != nil {
			return err
		}
		set, err := resourceslice.NewClassSet(mgr)
		if err != nil {
			return err
		}
		_, err = classhook.Build(mgr.GetClient(), byHand, accept("Granted", nil), nil, []any{resourceslice.WithBudget(budgets[byHand])},
			set, ctrl.NewControllerManagedBy(mgr).WithOptions(controller.Options{MaxConcurrentReconciles: 2}))
		return err
	})

	got := map[string][]string{}
	for _, class := range []string{auto, byHand} {
		got[class] = wiringScenario(t, class)
	}
	assert.Equal(t, []string{
		"budget: Accepted/Granted=2 Denied/BudgetExhausted=1",
		"tenant: Denied/TenantDrained=1",
		"after a deletion: Accepted/Granted=2",
		"consumer relabelled: Denied/ConsumerMismatch=2",
	}, got[auto], "AddToManager's decisions")
	assert.Equal(t, got[auto], got[byHand], "the by-hand controller decides exactly as AddToManager's")
}

// wiringScenario plays the same story on class and returns, stage by
// stage, the decisions counted by Status/Reason.
func wiringScenario(t *testing.T, class string) []string {
	t.Helper()
	ctx := context.Background()
	okNS, drainNS := testkit.Namespace(t, cp, class+"-ok"), testkit.Namespace(t, cp, class+"-drain")
	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionDrained)
	tenant.Namespace = drainNS
	require.NoError(t, cp.Client.Create(ctx, tenant))

	var stages []string
	tally := func(ns string, names ...string) string {
		counts := map[string]int{}
		for _, n := range names {
			c := conditions.Get(get(t, ns, n), authv1beta1.ResourceSliceConditionTypeResources)
			counts[string(c.Status)+"/"+c.Reason]++
		}
		var out []string
		for k, v := range counts {
			out = append(out, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}

	for _, n := range []string{"a", "b", "c"} {
		create(t, sliceIn(okNS, n, class))
	}
	testkit.Eventually(t, class+": a, b, c decided", decided(okNS, "a", "b", "c"))
	stages = append(stages, "budget: "+tally(okNS, "a", "b", "c"))

	create(t, sliceIn(drainNS, "d", class))
	testkit.Eventually(t, class+": d decided", decided(drainNS, "d"))
	stages = append(stages, "tenant: "+tally(drainNS, "d"))

	var left []string
	deleted := false
	for _, n := range []string{"a", "b", "c"} {
		if !deleted && conditions.IsAccepted(get(t, okNS, n)) {
			require.NoError(t, cp.Client.Delete(ctx, get(t, okNS, n)))
			deleted = true
			continue
		}
		left = append(left, n)
	}
	testkit.Eventually(t, class+": the waiting slice admitted", func() bool {
		return conditions.IsAccepted(get(t, okNS, left[0])) && conditions.IsAccepted(get(t, okNS, left[1]))
	})
	stages = append(stages, "after a deletion: "+tally(okNS, left...))

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ns corev1.Namespace
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: okNS}, &ns); err != nil {
			return err
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels["liqo.io/remote-cluster-id"] = "someone-else"
		return cp.Client.Update(ctx, &ns)
	}))
	testkit.Eventually(t, class+": the relabelled namespace's slices refused", func() bool {
		for _, n := range left {
			if conditions.Get(get(t, okNS, n), authv1beta1.ResourceSliceConditionTypeResources).Reason != "ConsumerMismatch" {
				return false
			}
		}
		return true
	})
	return append(stages, "consumer relabelled: "+tally(okNS, left...))
}

// ClassSet.Stop(ctx, class) is bounded by ctx: a handler that ignores its
// context keeps its decision in flight, Stop returns ctx's error, and the
// class is not released (Serve fails with ErrClassRegistered, and no
// second call runs beside the first) until that call returns; then it
// serves again.
func TestClassSetStopIsBoundedByItsContext(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "stop-bounded")
	const class = "stop-bounded"
	release := make(chan struct{})
	var inFlight, maxInFlight atomic.Int32
	var started atomic.Bool
	blocking := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if n > maxInFlight.Load() {
			maxInFlight.Store(n)
		}
		started.Store(true)
		<-release // ignores its context
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Late", "")
		return ctrl.Result{}, nil
	})
	var cs *resourceslice.ClassSet
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		cs, err = resourceslice.NewClassSet(mgr)
		return err
	})
	require.NoError(t, cs.Serve(class, blocking))
	create(t, sliceIn(ns, "s", class))
	testkit.Eventually(t, "the handler called", started.Load)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := cs.Stop(ctx, class)
	require.Error(t, err, "Stop gives up when its context ends")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotContains(t, cs.Classes(), class, "the class takes no new slice")
	err = cs.Serve(class, accept("Prompt", nil))
	assert.True(t, errors.Is(err, resourceslice.ErrClassRegistered), "the class is not released while a call is in flight: %v", err)

	close(release)
	testkit.Eventually(t, "the class released once the call returned", func() bool {
		return cs.Serve(class, accept("Prompt", nil)) == nil
	})
	testkit.Eventually(t, "the slice decided", decided(ns, "s"))
	assert.Equal(t, int32(1), maxInFlight.Load(), "never two calls at once")
	require.NoError(t, cs.Stop(context.Background(), class))
}
