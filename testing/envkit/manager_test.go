package envkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/testing/envkit"
)

// StartManager returns a running manager whose cache has synced; Stop
// waits until Start has returned, and a second Stop (the test's cleanup)
// does nothing.
func TestStartManagerStopWaits(t *testing.T) {
	cp.Require(t)
	started, stopped := make(chan struct{}), make(chan struct{})
	m := envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			time.Sleep(200 * time.Millisecond) // a runnable that takes its time to stop
			close(stopped)
			return nil
		}))
	})
	require.True(t, m.Running())
	// The cache syncs before the manager runs its other runnables: wait
	// for this one, or Stop may come before it ever started.
	select {
	case <-started:
	case <-time.After(envkit.WaitTimeout):
		t.Fatal("the runnable never started")
	}
	m.Stop()
	select {
	case <-stopped:
	default:
		t.Fatal("Stop returned before the manager's runnables stopped")
	}
	assert.False(t, m.Running())
	assert.NoError(t, m.Err(), "a clean stop")
	select {
	case <-m.Done():
	default:
		t.Fatal("Done is open after Stop")
	}
	m.Stop()
}

// A manager that ends on its own (here a runnable fails after the cache
// synced) shows it: Running turns false, Done closes and Err says why; the
// test's Stop then reports that error.
func TestManagerEndsOnItsOwn(t *testing.T) {
	cp.Require(t)
	fail := make(chan struct{})
	r := &recorder{TB: t}
	var m *envkit.Manager
	r.run(func(tb testing.TB) {
		m = envkit.StartManager(tb, cp, func(mgr manager.Manager) error {
			return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
				select {
				case <-fail:
					return errors.New("the runnable broke")
				case <-ctx.Done():
					return nil
				}
			}))
		})
	})
	require.NotNil(t, m)
	require.NoError(t, m.Err(), "no error while it runs")
	close(fail)
	select {
	case <-m.Done():
	case <-time.After(envkit.WaitTimeout):
		t.Fatal("the manager did not end when its runnable failed")
	}
	assert.False(t, m.Running())
	require.Error(t, m.Err())
	assert.Contains(t, m.Err().Error(), "the runnable broke")
	r.runCleanups()
	errs, _ := r.failures()
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "the runnable broke")
}

// A manager whose Start fails before its cache syncs (here leader
// election refuses its durations) is reported with Start's error at once,
// not waited for as a cache that never syncs. Its API server need not exist.
func TestStartManagerReportsAFailedStart(t *testing.T) {
	opts := envkit.ManagerOptions(t, runtime.NewScheme())
	opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = true, "testkit", "default"
	opts.LeaseDuration, opts.RenewDeadline = ptr.To(time.Second), ptr.To(2*time.Second)
	cfg := &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}
	r := &recorder{TB: t}
	r.run(func(tb testing.TB) {
		envkit.StartManagerWith(tb, cfg, opts, func(manager.Manager) error { return nil })
	})
	r.runCleanups()
	errs, fatal := r.failures()
	assert.Contains(t, fatal, "envkit: the manager stopped before its cache synced: ")
	assert.Contains(t, fatal, "leader election")
	require.Len(t, errs, 1, "the cleanup's Stop reports Start's error once")
	assert.Contains(t, errs[0], "envkit: the manager's Start returned: ")
}

// A runnable that outlives the manager's grace period fails the test's
// Stop, and the log then says what still runs: every goroutine's stack,
// the stuck runnable's among them.
func TestStopShowsWhatDidNotStop(t *testing.T) {
	cp.Require(t)
	release := make(chan struct{})
	defer close(release)
	opts := envkit.ManagerOptions(t, cp.Scheme)
	opts.GracefulShutdownTimeout = ptr.To(500 * time.Millisecond)
	r := &recorder{TB: t}
	started := make(chan struct{})
	var m *envkit.Manager
	r.run(func(tb testing.TB) {
		m = envkit.StartManagerWith(tb, cp.Config, opts, func(mgr manager.Manager) error {
			return mgr.Add(manager.RunnableFunc(func(context.Context) error {
				close(started)
				return stuckRunnable(release)
			}))
		})
	})
	require.NotNil(t, m)
	// The cache syncs before the manager starts its other runnables: stop
	// only once the stuck one runs, or it never starts and the stop is clean.
	select {
	case <-started:
	case <-time.After(envkit.WaitTimeout):
		t.Fatal("the runnable did not start")
	}
	r.run(func(testing.TB) { m.Stop() })
	errs, _ := r.failures()
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "grace period")
	logs := r.logged()
	require.Len(t, logs, 1, "the stacks are logged once")
	assert.Contains(t, logs[0], "envkit: the goroutines still running")
	assert.Contains(t, logs[0], "stuckRunnable", "the stuck runnable's stack is among them")
}

// stuckRunnable ignores its context: it returns only when released.
//
//go:noinline
func stuckRunnable(release <-chan struct{}) error {
	<-release
	return nil
}

// A manager of the kit logs through the test (t.Log), never through
// controller-runtime's global logger, which a test never sets (it prints
// "log.SetLogger(...) was never called" with a stack after 30 seconds);
// once the test and its cleanups are done, a late line is dropped, where
// t.Log would panic.
func TestManagersLogThroughTheTest(t *testing.T) {
	r := &recorder{TB: t}
	loggers := map[string]logr.Logger{
		"ManagerOptions":     envkit.ManagerOptions(r, runtime.NewScheme()).Logger,
		"UnreachableManager": envkit.UnreachableManager(r).GetLogger(),
	}
	for name, log := range loggers {
		assert.NotSame(t, ctrllog.Log.GetSink(), log.GetSink(), "%s: not controller-runtime's global logger", name)
		before := len(r.logged())
		log.WithName("resourceslice-gold").Info("decided", "by", name)
		logs := r.logged()
		require.Len(t, logs, before+1, "%s: logged through the test", name)
		assert.Contains(t, logs[before], `"by"="`+name+`"`)
		assert.Contains(t, logs[before], "resourceslice-gold")
	}
	r.runCleanups()
	n := len(r.logged())
	for _, log := range loggers {
		log.Info("after the test")
	}
	assert.Len(t, r.logged(), n, "dropped once the test is done")
}
