package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

const (
	// syncTimeout bounds how long StartManager waits for the manager's cache
	// to sync: a test fails rather than hangs.
	syncTimeout = 2 * time.Minute
	// stopTimeout bounds how long Manager.Stop waits for the manager's Start
	// to return.
	stopTimeout = time.Minute
)

// ManagerOptions are the options of a manager in a test: scheme, no metrics
// or health-probe listener (tests of one process would fight for the
// ports), controller names that may repeat (each test starts its own
// manager, often serving a class an earlier test served), and
// controller-runtime's logger named after the test.
func ManagerOptions(t testing.TB, scheme *runtime.Scheme) manager.Options {
	return manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:                 log.Log.WithName(t.Name()),
	}
}

// Manager is a manager started by StartManager, stopped when the test ends.
type Manager struct {
	manager.Manager

	t      testing.TB
	cancel context.CancelFunc
	once   sync.Once
	// done is closed when Start returns; err is what it returned.
	done chan struct{}
	err  error
}

// StartManager builds a manager on cp with ManagerOptions, lets register
// add its controllers, starts it and waits (at most two minutes) for its
// cache to sync. It is
// stopped when the test ends, or earlier with Stop:
//
//	stop := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
//		return resourceslice.AddToManager(mgr, "gold", h)
//	}).Stop
func StartManager(t testing.TB, cp *controlplane.ControlPlane, register func(manager.Manager) error) *Manager {
	t.Helper()
	return StartManagerWith(t, cp.Config, ManagerOptions(t, cp.Scheme), register)
}

// StartManagerWith is StartManager on cfg (a transport that injects
// faults, another user) with opts (ManagerOptions changed).
func StartManagerWith(t testing.TB, cfg *rest.Config, opts manager.Options, register func(manager.Manager) error) *Manager {
	t.Helper()
	mgr, err := manager.New(cfg, opts)
	require.NoError(t, err, "building the manager")
	require.NoError(t, register(mgr), "registering with the manager")
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{Manager: mgr, t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.err = mgr.Start(ctx)
	}()
	t.Cleanup(m.Stop)
	// A manager whose Start fails never syncs: stop waiting then.
	syncCtx, stopSync := context.WithTimeout(ctx, syncTimeout)
	defer stopSync()
	go func() {
		select {
		case <-m.done:
			stopSync()
		case <-syncCtx.Done():
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		if !m.Running() {
			t.Fatalf("manager stopped before its cache synced: %v", m.err)
		}
		t.Fatalf("manager cache did not sync within %s", syncTimeout)
	}
	return m
}

// Running reports whether the manager's Start has not returned: false once
// it is stopped, or if it ended on its own (a lost leader election, an
// error).
func (m *Manager) Running() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Stop stops the manager and waits at most a minute for its Start to
// return; an error from Start, or a manager that does not stop, fails the
// test. Only the first call stops; it is also called when the test ends.
func (m *Manager) Stop() {
	m.once.Do(func() {
		m.cancel()
		select {
		case <-m.done:
			if m.err != nil {
				m.t.Errorf("manager: %v", m.err)
			}
		case <-time.After(stopTimeout):
			m.t.Errorf("manager did not stop within %s", stopTimeout)
		}
	})
}
