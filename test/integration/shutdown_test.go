package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Shutdown (issue 35): a stopped manager stops deciding at once, and
// leaves nothing running.

// processGoroutines are the goroutines that outlive a manager by design,
// each process-wide, not the SDK's: goleak ignores them (and only them)
// on top of those running before the test.
var processGoroutines = []goleak.Option{
	// client-go keeps one HTTP transport per TLS configuration for the
	// whole process (its transport cache), and Go's transport keeps idle
	// keep-alive connections to the API server, each with a read and a
	// write loop, until they have been idle for 90 seconds.
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	// An HTTP/2 connection of that transport has a read loop instead.
	goleak.IgnoreTopFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"),
	goleak.IgnoreTopFunction("net/http.(*http2clientConnReadLoop).run"),
	// Not process-wide, but not the SDK's either: controller-runtime wraps
	// the watch of a metadata-only informer (the manager's namespaces, and
	// owned objects) in apimachinery's watch.Filter, whose goroutine blocks
	// for good on an event that arrived as the informer stopped, since
	// nothing reads its result any more (kubernetes/kubernetes#113254,
	// open upstream).
	goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
}

// Managers with everything the SDK starts (classes with class Leases, a
// budget with its feed and the evictor, a ClassSet serving, stopping and
// serving again, under leader election, and a standby that is never
// elected) are started, made to decide and stopped, three times in one
// process: afterwards no goroutine is left that was not running before.
func TestManagersLeaveNoGoroutine(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "leak")
	leases := testkit.Namespace(t, cp, "leak-leases")
	before := goleak.IgnoreCurrent()
	for i := range 3 {
		opts := testkit.ManagerOptions(t, cp.Scheme)
		opts.LeaderElection = true
		opts.LeaderElectionNamespace = leases
		opts.LeaderElectionID = fmt.Sprintf("leak-%d", i)
		opts.LeaderElectionReleaseOnCancel = true
		// register wires every class, drawing from a budget of its own, and
		// the ClassSet into *cs.
		register := func(mgr manager.Manager, budgetName string, cs **resourceslice.ClassSet) error {
			b, err := budget.New(budgetName, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")},
				budget.WithEvictionAfter(time.Second))
			if err != nil {
				return err
			}
			for _, class := range []string{"leak-gold", "leak-silver"} {
				if err := resourceslice.AddToManager(mgr, class, accept("Granted", nil), resourceslice.WithBudget(b),
					resourceslice.WithClassLease(leases), resourceslice.WithoutTenantRule()); err != nil {
					return err
				}
			}
			if *cs, err = resourceslice.NewClassSet(mgr, resourceslice.WithClassLease(leases), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule()); err != nil {
				return err
			}
			return (*cs).Serve("leak-dyn", accept("Granted", nil))
		}
		var leaderSet, standbySet *resourceslice.ClassSet
		m := testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
			return register(mgr, fmt.Sprintf("leak-%d", i), &leaderSet)
		})
		// A standby of the same election: its classes and feeds are built
		// but never started.
		standby := testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
			return register(mgr, fmt.Sprintf("leak-standby-%d", i), &standbySet)
		})
		var names []string
		for _, class := range []string{"leak-gold", "leak-silver", "leak-dyn"} {
			name := fmt.Sprintf("%s-%d", class, i)
			create(t, sliceIn(ns, name, class))
			names = append(names, name)
		}
		testkit.Eventually(t, "every class decided its slice", decided(ns, names...))
		// A class served and stopped while the manager runs, then served
		// again, on the leader and on the standby (unelected).
		for _, cs := range []*resourceslice.ClassSet{leaderSet, standbySet} {
			require.NoError(t, cs.Stop(context.Background(), "leak-dyn"))
			require.NoError(t, cs.Serve("leak-dyn", accept("Again", nil)))
		}
		standby.Stop()
		m.Stop()
		require.False(t, standby.Running(), "standby %d stopped", i)
		require.False(t, m.Running(), "manager %d stopped", i)
	}
	goleak.VerifyNone(t, append([]goleak.Option{before}, processGoroutines...)...)
}

// writeLog records the writes a manager sends to ResourceSlices and
// ShadowPods, with when each was sent.
type writeLog struct {
	mu     sync.Mutex
	writes []sentWrite
}

type sentWrite struct {
	at          time.Time
	method, url string
}

func (w *writeLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		path := req.URL.Path
		if req.Method != http.MethodGet && (strings.Contains(path, "/resourceslices") || strings.Contains(path, "/shadowpods")) {
			w.mu.Lock()
			w.writes = append(w.writes, sentWrite{at: time.Now(), method: req.Method, url: path})
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// since lists the writes sent at t or later.
func (w *writeLog) since(t time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.writes {
		if !s.at.Before(t) {
			out = append(out, s.method+" "+s.url)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A handler blocked in a call (waiting on its context) when its manager
// stops sees its context cancelled (how soon is logged), and the answer it
// then returns is not written: no write to a slice starts after the stop, for a
// class of AddToManager (drawing from a budget) and of a ClassSet alike.
func TestStoppedManagerStopsDecidingAtOnce(t *testing.T) {
	cp.Require(t)
	for _, served := range []string{"AddToManager", "ClassSet"} {
		t.Run(served, func(t *testing.T) {
			ns := testkit.Namespace(t, cp, "stop-"+strings.ToLower(served))
			class := "stop-" + strings.ToLower(served)
			entered := make(chan struct{}, 1)
			cancelled := make(chan time.Time, 1)
			blocked := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				select {
				case entered <- struct{}{}:
				default:
				}
				select {
				case <-ctx.Done():
					cancelled <- time.Now()
				case <-time.After(testwait.Timeout): // never cancelled: the test fails below
				}
				// An answer after the stop, which must not be written.
				rs.Status.Resources = rs.Spec.Resources.DeepCopy()
				conditions.Accept(rs, "AfterStop", "decided by a stopped leader")
				return ctrl.Result{}, nil
			})
			b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
			require.NoError(t, err)
			var log writeLog
			cfg := rest.CopyConfig(cp.Config)
			cfg.Wrap(log.wrap)
			opts := testkit.ManagerOptions(t, cp.Scheme)
			opts.GracefulShutdownTimeout = ptr.To(30 * time.Second)
			m := testkit.StartManagerWith(t, cfg, opts, func(mgr manager.Manager) error {
				if served == "AddToManager" {
					return resourceslice.AddToManager(mgr, class, blocked, resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
				}
				cs, err := resourceslice.NewClassSet(mgr)
				if err != nil {
					return err
				}
				return cs.Serve(class, blocked, resourceslice.WithoutTenantRule())
			})
			create(t, sliceIn(ns, "s", class))
			select {
			case <-entered:
			case <-time.After(testwait.Timeout):
				t.Fatalf("the handler was not called within %s", testwait.Timeout)
			}
			rv := get(t, ns, "s").ResourceVersion

			stopAt := time.Now()
			stopped := make(chan time.Duration, 1)
			go func() {
				m.Stop()
				stopped <- time.Since(stopAt)
			}()
			select {
			case at := <-cancelled:
				// How soon is reported, not asserted: a handler whose context
				// outlived the stop would hold the manager past its grace
				// period, and Stop would fail the test.
				t.Logf("the handler's context was cancelled %s after the stop", at.Sub(stopAt))
			case <-time.After(testwait.Timeout):
				t.Fatalf("the handler's context was not cancelled within %s of the manager stopping", testwait.Timeout)
			}
			select {
			case d := <-stopped:
				t.Logf("the manager's Start returned %s after the stop", d)
			case <-time.After(testwait.Timeout):
				t.Fatalf("the manager did not stop within %s", testwait.Timeout)
			}
			assert.Empty(t, log.since(stopAt), "no write to a slice starts after the manager stopped")
			rs := get(t, ns, "s")
			assert.Equal(t, rv, rs.ResourceVersion, "the slice is as it was when the manager stopped")
			assert.False(t, conditions.IsDecided(rs), "the stopped leader's answer is not written")
		})
	}
}
