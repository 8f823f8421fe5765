package testkit

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// The SDK's tests use the public kit (testing/envkit) through these names,
// which predate it.

// Manager is envkit.Manager.
type Manager = envkit.Manager

// Poller is envkit.Poller.
type Poller = envkit.Poller

// ManagerOptions is envkit.ManagerOptions.
func ManagerOptions(t testing.TB, scheme *runtime.Scheme) manager.Options {
	return envkit.ManagerOptions(t, scheme)
}

// StartManager is envkit.StartManager.
func StartManager(t testing.TB, cp *controlplane.ControlPlane, register func(manager.Manager) error) *Manager {
	t.Helper()
	return envkit.StartManager(t, cp, register)
}

// StartManagerWith is envkit.StartManagerWith.
func StartManagerWith(t testing.TB, cfg *rest.Config, opts manager.Options, register func(manager.Manager) error) *Manager {
	t.Helper()
	return envkit.StartManagerWith(t, cfg, opts, register)
}

// Every is envkit.Every.
func Every(interval time.Duration) Poller { return envkit.Every(interval) }

// Eventually is envkit.Eventually: it waits up to envkit.WaitTimeout.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	envkit.Eventually(t, what, cond)
}

// EventuallyScaled is p.Eventually for bulk work that takes minutes even on
// an idle machine (thousands of slices decided or re-evaluated, a soak's
// fleet): it gives up after times × envkit.WaitTimeout instead, so that
// these deadlines too follow the tests' one deadline (internal/testwait).
// Like Eventually, it returns at the first check at which cond holds.
func EventuallyScaled(t testing.TB, p Poller, times int, what string, cond func() bool) {
	t.Helper()
	timeout := time.Duration(times) * envkit.WaitTimeout
	// Holds ends at the first check that fails: the first at which cond
	// holds. It holds throughout only if cond never did.
	if p.Holds(timeout, func() bool { return !cond() }) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Consistently is envkit.Consistently.
func Consistently(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	envkit.Consistently(t, d, what, cond)
}

// UnreachableManager is envkit.UnreachableManager.
func UnreachableManager(t testing.TB) manager.Manager {
	t.Helper()
	return envkit.UnreachableManager(t)
}
