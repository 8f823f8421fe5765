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

// Eventually is envkit.Eventually.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	envkit.Eventually(t, timeout, what, cond)
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
