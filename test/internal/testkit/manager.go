package testkit

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// The SDK's tests use the public kit (testing/envkit) through these names,
// which predate it.

// Manager is envkit.Manager.
type Manager = envkit.Manager

// Poller checks a condition at an interval of its own (testwait.Poller):
// the SDK's tests poll slower where each check is expensive and faster
// where they catch a short-lived state; envkit offers its users only
// Eventually and Consistently.
type Poller = testwait.Poller

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

// Every returns a Poller that checks every interval.
func Every(interval time.Duration) Poller { return testwait.Every(interval) }

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
	p.EventuallyWithin(t, time.Duration(times)*envkit.WaitTimeout, what, cond)
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
