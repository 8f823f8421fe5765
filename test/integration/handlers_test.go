package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Authentication gate: a slice is decided only once Liqo accepts its
// authentication.
func TestAuthenticationGate(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "gate")
	var c calls
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "gate", accept("Granted", &c))
	})
	create(t, sliceIn(ns, "g", "gate", slicetest.Unauthenticated()))
	testkit.Consistently(t, 2*time.Second, "an unauthenticated slice stays undecided and unhandled", func() bool {
		return !conditions.IsDecided(get(t, ns, "g")) && c.get("g") == 0
	})
	require.NoError(t, slicetest.Authenticate(context.Background(), cp.Client, types.NamespacedName{Namespace: ns, Name: "g"}))
	waitForDecision(t, ns, "g")
}

// Faulty handlers: panic, no decision, error-then-success. Others are
// decided, events say what happened, and a contract error is not retried.
func TestFaultyHandlers(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "faulty")
	var c calls
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		n := c.inc(rs.Name)
		switch rs.Name {
		case "boom":
			panic("policy bug")
		case "mute":
			return ctrl.Result{}, nil
		case "flaky":
			if n <= 2 {
				return ctrl.Result{}, errors.New("capacity service unavailable")
			}
		}
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "faulty", h, fastBackoff())
	})
	others := []string{"ok-1", "ok-2", "ok-3"}
	for _, n := range append([]string{"boom", "mute", "flaky"}, others...) {
		create(t, sliceIn(ns, n, "faulty"))
	}
	testkit.Eventually(t, "healthy slices and flaky decided", decided(ns, append(others, "flaky")...))
	for _, n := range []string{"boom", "mute"} {
		assert.False(t, conditions.IsDecided(get(t, ns, n)), "%s must stay undecided", n)
	}
	testkit.Eventually(t, "HandlerPanicked event on boom", hasEvent(t, ns, "boom", "HandlerPanicked"))
	testkit.Eventually(t, "NoDecision event on mute", hasEvent(t, ns, "mute", "NoDecision"))
	testkit.Eventually(t, "HandlerFailed event on flaky", hasEvent(t, ns, "flaky", "HandlerFailed"))
	require.Equal(t, 1, c.get("mute"), "a handler that decides nothing is called once")
	testkit.Consistently(t, 2*time.Second, "a contract error is not retried", func() bool { return c.get("mute") == 1 })
}

// Invalid input from the API side gets a clear decision or event and no
// crash loop.
func TestInvalidInput(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "invalid")
	caps, err := cappedresources.ParseCaps("cpu=4,memory=8Gi")
	require.NoError(t, err)
	policy, err := cappedresources.New(caps)
	require.NoError(t, err)
	var c calls
	counted := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		c.inc(rs.Name)
		return policy.Handle(ctx, rs)
	})
	var cneg calls
	negative := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		cneg.inc(rs.Name)
		rs.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-2")}
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, "inv", counted, fastBackoff()); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "inv-neg", negative, fastBackoff())
	})
	nothing := sliceIn(ns, "empty", "inv")
	nothing.Spec.Resources = corev1.ResourceList{}
	create(t, nothing)
	create(t, sliceIn(ns, "absurd", "inv", slicetest.WithRequest(corev1.ResourceCPU, "1e15"), slicetest.WithRequest(corev1.ResourceMemory, "9e18")))
	create(t, sliceIn(ns, "neg", "inv-neg"))

	empty := waitForDecision(t, ns, "empty")
	assert.True(t, conditions.IsDenied(empty), "an empty request must be denied, got %+v", empty.Status.Conditions)
	abs := waitForDecision(t, ns, "absurd")
	assert.True(t, conditions.IsAccepted(abs), "absurd quantities are capped, not refused: %+v", abs.Status.Conditions)
	assert.Zero(t, abs.Status.Resources.Cpu().Cmp(resource.MustParse("4")), "cpu capped at 4, got %v", abs.Status.Resources)
	assert.Zero(t, abs.Status.Resources.Memory().Cmp(resource.MustParse("8Gi")), "memory capped at 8Gi, got %v", abs.Status.Resources)

	testkit.Eventually(t, "InvalidResources event", hasEvent(t, ns, "neg", "InvalidResources"))
	testkit.Consistently(t, 2*time.Second, "no crash loop", func() bool {
		if c.get("empty") > 3 || c.get("absurd") > 3 || cneg.get("neg") != 1 {
			t.Logf("handler calls: empty=%d absurd=%d neg=%d", c.get("empty"), c.get("absurd"), cneg.get("neg"))
			return false
		}
		return true
	})
	assert.False(t, conditions.IsDecided(get(t, ns, "neg")), "a negative offer must not be saved")
}
