package soak

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
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

// startSoakManager starts the manager a user would run: three classes with
// four workers each, the bronze class drawing from a budget, the slice cache
// trimmed, the tenant rule on (the default), decision events as events
// says. Events are off by default because client-go's event broadcaster
// keeps every event it sends for six minutes (to build series): with events
// on, a few minutes' soak measures that cache filling, not the SDK.
func startSoakManager(t *testing.T, bronze *budget.Budget, reg *prometheus.Registry, logs *errorLog, events resourceslice.DecisionEvents) *testkit.Manager {
	t.Helper()
	opts := testkit.ManagerOptions(t, cp.Scheme)
	opts.Logger = logr.New(errorSink{logs})
	resourceslice.DropUnreadSliceFields(&opts.Cache)
	return testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
		common := []resourceslice.Option{
			resourceslice.WithMaxConcurrentReconciles(4),
			resourceslice.WithDecisionEvents(events),
			resourceslice.WithMetricsRegisterer(reg),
		}
		if err := resourceslice.AddToManager(mgr, classGold, grant(0), common...); err != nil {
			return err
		}
		if err := resourceslice.AddToManager(mgr, classSilver, grant(silverMaxCPU), common...); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, classBronze, grant(0), append(common, resourceslice.WithBudget(bronze))...)
	})
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
