package failover

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Leader election timing of the replicas: short, to keep the tests short.
// controller-runtime's defaults (15s, 10s, 2s) make a crashed leader's
// lease expire 15s after its last renewal instead of 4s; the standby notices
// within one retry period after that.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// errCrashed is what every request of a crashed replica gets.
var errCrashed = errors.New("replica crashed: no API access")

// tap sits in a replica's HTTP transport, under every client the manager
// builds (cache, client, leader election, events): it can cut the replica
// off the API server, and it records what the replica did there.
type tap struct {
	// cut, once set, fails every request before it leaves the process.
	cut atomic.Bool
	// patches counts the status PATCHes on resourceslices the API server
	// answered with 2xx, i.e. applied.
	patches atomic.Int64
	// firstPatch and lastPatch are when (unix nanoseconds) the first and the
	// latest of those answers arrived.
	firstPatch, lastPatch atomic.Int64
	// sliceRead is when the replica first read the resourceslices
	// collection (a list or a watch: its informer starting).
	sliceRead atomic.Int64
	// trace, if set, is told of every request that left the process.
	trace func(method, uri string, code int, took time.Duration, err error)
	// writing counts the requests other than GETs that are in flight.
	writing atomic.Int64
	// electionID is the leader-election Lease's name; electionTried is when
	// the replica first asked for it (it has reached leader election).
	electionID    string
	electionTried atomic.Int64
}

// roundTripperFunc adapts a function to http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrap is the tap as a rest.Config transport wrapper. A request that passed
// the cut check is counted when its answer arrives even if the replica was
// cut meanwhile: the server applied it.
func (tp *tap) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if tp.cut.Load() {
			return nil, errCrashed
		}
		path := req.URL.Path
		if req.Method == http.MethodGet && strings.HasSuffix(path, "/resourceslices") {
			tp.sliceRead.CompareAndSwap(0, time.Now().UnixNano())
		}
		if strings.HasSuffix(path, "/leases/"+tp.electionID) {
			tp.electionTried.CompareAndSwap(0, time.Now().UnixNano())
		}
		if req.Method != http.MethodGet {
			tp.writing.Add(1)
			defer tp.writing.Add(-1)
		}
		start := time.Now()
		resp, err := next.RoundTrip(req)
		if tp.trace != nil {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			tp.trace(req.Method, req.URL.RequestURI(), code, time.Since(start), err)
		}
		if err == nil && req.Method == http.MethodPatch && isSliceStatus(path) && resp.StatusCode/100 == 2 {
			now := time.Now().UnixNano()
			tp.firstPatch.CompareAndSwap(0, now)
			tp.lastPatch.Store(now)
			tp.patches.Add(1)
		}
		return resp, err
	})
}

// isSliceStatus reports whether path is a ResourceSlice's status
// subresource: .../namespaces/NS/resourceslices/NAME/status.
func isSliceStatus(path string) bool {
	parts := strings.Split(path, "/")
	n := len(parts)
	return n >= 4 && parts[n-1] == "status" && parts[n-3] == "resourceslices"
}

// at converts a recorded unix-nanosecond instant to a time (zero if unset).
func at(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// replicaSpec says how to build one replica.
type replicaSpec struct {
	// name names the replica's logger and is its class Lease identity
	// (POD_NAME, as a Deployment would set it).
	name string
	// electionID and namespace locate the leader-election Lease.
	electionID, namespace string
	// warmup sets the manager's config.Controller.EnableWarmup.
	warmup bool
	// register adds the class controllers to the manager.
	register func(mgr manager.Manager) error
}

// replica is one running manager of a leader-elected pair.
type replica struct {
	name string
	mgr  manager.Manager
	tap  *tap
	// elected is when (unix nanoseconds) the manager became leader.
	elected atomic.Int64
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startReplica builds and starts a replica; it is stopped when the test
// ends if the test did not stop or crash it.
func startReplica(t *testing.T, spec replicaSpec) *replica {
	t.Helper()
	tp := &tap{electionID: spec.electionID}
	logger := log.Log.WithName(t.Name()).WithName(spec.name)
	if os.Getenv(debugLogEnv) != "" {
		requests := logger.WithName("requests")
		tp.trace = func(method, uri string, code int, took time.Duration, err error) {
			requests.V(1).Info("request", "method", method, "uri", uri, "code", code, "took", took, "error", err)
		}
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(tp.wrap)
	opts := testkit.ManagerOptions(t, cp.Scheme)
	opts.Logger = logger
	opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = true, spec.electionID, spec.namespace
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = ptr.To(leaseDuration), ptr.To(renewDeadline), ptr.To(retryPeriod)
	opts.GracefulShutdownTimeout = ptr.To(10 * time.Second)
	opts.Controller.EnableWarmup = ptr.To(spec.warmup)
	mgr, err := manager.New(cfg, opts)
	require.NoError(t, err)
	// The class Lease's holder is read from POD_NAME when a class is
	// registered: each replica gets its own, as each pod would.
	t.Setenv("POD_NAME", spec.name)
	require.NoError(t, spec.register(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: spec.name, mgr: mgr, tap: tp, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	go func() {
		select {
		case <-mgr.Elected():
			r.elected.Store(time.Now().UnixNano())
		case <-ctx.Done():
		}
	}()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("replica %s: %v", r.name, err)
		}
	})
	return r
}

// leads reports whether the replica is the leader.
func (r *replica) leads() bool { return r.elected.Load() != 0 }

// crash makes the replica vanish as a crashed pod does: every request fails
// from now on, so it can neither write nor release its leader-election
// Lease (nor its class Lease), and then it is stopped. It returns when the
// replica lost API access, and waits for it to stop.
//
// Writes already sent when the replica is cut are let finish before it is
// stopped: the server applies a request it has received whatever becomes of
// the pod, and stopping first would cancel the request's context so that
// the tap would miss an answer the server gave.
func (r *replica) crash(t *testing.T) time.Time {
	t.Helper()
	r.tap.cut.Store(true)
	vanished := time.Now()
	testkit.Eventually(t, "the crashed replica's writes in flight to be answered",
		func() bool { return r.tap.writing.Load() == 0 })
	r.cancel()
	r.stopped = true
	select {
	case err := <-r.done:
		t.Logf("crashed replica %s stopped (error expected): %v", r.name, err)
	case <-time.After(testwait.Timeout):
		t.Fatalf("crashed replica %s did not stop within %s", r.name, testwait.Timeout)
	}
	return vanished
}

// stop stops a live replica cleanly and returns the manager's error.
func (r *replica) stop() error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(testwait.Timeout):
		return fmt.Errorf("did not stop within %s", testwait.Timeout)
	}
}
