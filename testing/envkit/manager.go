package envkit

import (
	"context"
	"errors"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// ManagerOptions are the options of a manager in a test: scheme, no
// metrics or health-probe listener (tests of one process would fight for
// the ports), controller names that may repeat (each test starts its own
// manager, often serving a class an earlier test served), and a logger on
// the test: the manager, its controllers and what the SDK logs through
// them write with t.Log (testr), shown by go test -v or when the test
// fails, and never through controller-runtime's global logger (which,
// never set in a test, prints "log.SetLogger(...) was never called" with a
// stack after 30 seconds). A line logged once the test and its cleanups
// are done is dropped, where t.Log would panic. Change what your test
// needs and pass them to StartManagerWith.
func ManagerOptions(t testing.TB, scheme *runtime.Scheme) manager.Options {
	return manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:                 testLogger(t),
	}
}

// testLogger is a logger writing through t.Log until the test and its
// cleanups are done (a manager stops in a cleanup), and dropping what a
// goroutine left behind logs after.
func testLogger(t testing.TB) logr.Logger {
	l := &testLog{t: t}
	// Registered before the manager's Stop, so run after it.
	t.Cleanup(l.close)
	return testr.NewWithInterface(l, testr.Options{})
}

// testLog is the testr.TestingT of testLogger.
type testLog struct {
	t    testing.TB
	mu   sync.RWMutex
	done bool
}

func (l *testLog) Helper() { l.t.Helper() }

func (l *testLog) Log(args ...any) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.done {
		l.t.Log(args...)
	}
}

func (l *testLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
}

// Manager is a manager started by StartManager, stopped when the test ends
// or earlier by Stop. It embeds the manager: GetClient, GetCache and the
// rest are the running manager's.
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
// add the controllers under test, starts it and waits (at most WaitTimeout)
// for its cache to sync. It is stopped when the test ends, or earlier with
// Stop:
//
//	m := envkit.StartManager(t, cp, func(mgr manager.Manager) error {
//		return resourceslice.AddToManager(mgr, "gold", h)
//	})
//	// ... the test
//	m.Stop() // a restart, say: the test ends with the manager stopped
//
// A manager whose Start fails before its cache syncs (a bad leader election
// setting, a runnable that fails at once) fails the test with Start's error,
// not with a sync timeout.
func StartManager(t testing.TB, cp *controlplane.ControlPlane, register func(manager.Manager) error) *Manager {
	t.Helper()
	return StartManagerWith(t, cp.Config, ManagerOptions(t, cp.Scheme), register)
}

// StartManagerWith is StartManager on cfg (another user's, say, to test
// your RBAC; or a transport that injects faults) with opts (ManagerOptions
// changed).
func StartManagerWith(t testing.TB, cfg *rest.Config, opts manager.Options, register func(manager.Manager) error) *Manager {
	t.Helper()
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatalf("envkit: building the manager: %v", err)
	}
	if err := register(mgr); err != nil {
		t.Fatalf("envkit: registering with the manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{Manager: mgr, t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.err = mgr.Start(ctx)
	}()
	t.Cleanup(m.Stop)
	// A manager whose Start fails never syncs: stop waiting then.
	syncCtx, stopSync := context.WithTimeout(ctx, WaitTimeout)
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
			t.Fatalf("envkit: the manager stopped before its cache synced: %v", m.err)
		}
		t.Fatalf("envkit: the manager's cache did not sync within %s", WaitTimeout)
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

// Done is closed when the manager's Start has returned, by Stop or on its
// own; Err then says why.
func (m *Manager) Done() <-chan struct{} { return m.done }

// Err returns what the manager's Start returned, once Done is closed; nil
// while it runs and after a clean stop.
func (m *Manager) Err() error {
	select {
	case <-m.done:
		return m.err
	default:
		return nil
	}
}

// Stop stops the manager and waits at most WaitTimeout for its Start to
// return, so that when Stop returns no controller of the manager writes any
// more. An error from Start, or a manager that does not stop in time, fails
// the test (t.Errorf, naming which); when something the manager ran did
// not return (Start gave up after its grace period, or WaitTimeout passed),
// the test log also gets every goroutine's stack, to say what. Only the
// first call stops; it is also called when the test ends.
func (m *Manager) Stop() {
	m.once.Do(func() {
		m.cancel()
		select {
		case <-m.done:
			if m.err != nil {
				m.t.Errorf("envkit: the manager's Start returned: %v", m.err)
				if errors.Is(m.err, context.DeadlineExceeded) { // a runnable outlived the grace period
					m.t.Logf("envkit: the goroutines still running:\n%s", goroutines())
				}
			}
		case <-time.After(WaitTimeout):
			m.t.Errorf("envkit: the manager did not stop within %s", WaitTimeout)
			m.t.Logf("envkit: the goroutines still running:\n%s", goroutines())
		}
	})
}

// goroutines returns the stacks of the process's goroutines, at most
// 256 KiB of them: what a manager that did not stop is still running.
func goroutines() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	const limit = 256 << 10
	if s := b.String(); len(s) > limit {
		return s[:limit] + "\n[truncated]"
	}
	return b.String()
}
