package soak

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// parseEvents reads eventsEnv.
func parseEvents(v string) (resourceslice.DecisionEvents, error) {
	switch v {
	case "none":
		return resourceslice.DecisionEventsNone, nil
	case "denied":
		return resourceslice.DecisionEventsDenied, nil
	case "all":
		return resourceslice.DecisionEventsAll, nil
	}
	return 0, fmt.Errorf("%q: want none, denied or all", v)
}

// startManager starts the manager a user would run: three classes with four
// workers each, the bronze class drawing from a budget, the slice cache
// trimmed, the tenant rule on (the default), decision events as events
// says. Events are off by default because client-go's event broadcaster
// keeps every event it sends for six minutes (to build series): with events
// on, a few minutes' soak measures that cache filling, not the SDK.
func startManager(t *testing.T, bronze *budget.Budget, reg *prometheus.Registry, logs *errorLog, events resourceslice.DecisionEvents) (manager.Manager, func()) {
	t.Helper()
	opts := manager.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.New(errorSink{logs}),
	}
	resourceslice.TrimCache(&opts.Cache)
	mgr, err := manager.New(cp.Config, opts)
	require.NoError(t, err)
	common := []resourceslice.Option{
		resourceslice.WithMaxConcurrentReconciles(4),
		resourceslice.WithDecisionEvents(events),
		resourceslice.WithMetricsRegisterer(reg),
	}
	require.NoError(t, resourceslice.AddToManager(mgr, classGold, grant(0), common...))
	require.NoError(t, resourceslice.AddToManager(mgr, classSilver, grant(silverMaxCPU), common...))
	require.NoError(t, resourceslice.AddToManager(mgr, classBronze, grant(0), append(common, resourceslice.WithBudget(bronze))...))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err, "manager")
			case <-time.After(time.Minute):
				t.Error("manager did not stop within a minute")
			}
		})
	}
	t.Cleanup(stop)
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx), "manager cache did not sync")
	return mgr, stop
}

// grant is the classes' policy: grant what is asked, or, with maxCPU > 0,
// deny a slice asking more CPU than that with reasonTooLarge.
func grant(maxCPU int64) handler.Func {
	return func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		if cpu := rs.Spec.Resources.Cpu(); maxCPU > 0 && cpu.Value() > maxCPU {
			rs.Status.Resources = nil
			conditions.Deny(rs, reasonTooLarge, fmt.Sprintf("asks %s CPU, the class grants at most %d", cpu, maxCPU))
			return ctrl.Result{}, nil
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, reasonGranted, "granted as requested")
		return ctrl.Result{}, nil
	}
}

// errorLog keeps what the manager logs at error level; info lines (one per
// decision) are dropped.
type errorLog struct {
	mu     sync.Mutex
	n      int
	firsts []string
}

func (l *errorLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.firsts) < 10 {
		l.firsts = append(l.firsts, line)
	}
}

func (l *errorLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *errorLog) first() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.firsts) == 0 {
		return ""
	}
	return "; first ones:\n" + strings.Join(l.firsts, "\n")
}

// errorSink is a logr.LogSink writing errors to an errorLog.
type errorSink struct{ l *errorLog }

var _ logr.LogSink = errorSink{}

func (errorSink) Init(logr.RuntimeInfo)    {}
func (errorSink) Enabled(int) bool         { return false }
func (errorSink) Info(int, string, ...any) {}
func (s errorSink) Error(err error, msg string, kv ...any) {
	s.l.add(fmt.Sprintf("%s: %v %v", msg, err, kv))
}
func (s errorSink) WithValues(...any) logr.LogSink { return s }
func (s errorSink) WithName(string) logr.LogSink   { return s }
