package integration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane shared by the suite; each test works in its own
// namespace with its own class names, so tests do not see each other.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	var err error
	cp, err = controlplane.New()
	if err != nil {
		if errors.Is(err, controlplane.ErrNoAssets) && os.Getenv(controlplane.RequireEnv) == "" {
			fmt.Fprintln(os.Stderr, "integration: skipped:", err)
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	if err := eventsv1.AddToScheme(cp.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "integration: stopping control plane:", err)
	}
	os.Exit(code)
}

// namespace creates a namespace for the test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	if err := cp.CreateNamespace(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return name
}

// startManager builds a manager, lets register add controllers, starts it,
// and returns a function that stops it (also called when the test ends).
func startManager(t *testing.T, register func(mgr manager.Manager) error) (stop func()) {
	t.Helper()
	return startManagerWith(t, manager.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:                 log.Log.WithName(t.Name()),
	}, register)
}

// startManagerWith is startManager with the caller's manager options.
func startManagerWith(t *testing.T, opts manager.Options, register func(mgr manager.Manager) error) (stop func()) {
	t.Helper()
	mgr, err := manager.New(cp.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}
	return stop
}

// create creates the slice and then writes its status with a PUT, as Liqo's
// replicator would (a create ignores status when there is a status
// subresource). PUT, not PATCH, so the API server's PATCH counter counts only
// the controller.
func create(t *testing.T, rs *authv1beta1.ResourceSlice) {
	t.Helper()
	ctx := context.Background()
	status := rs.Status
	if err := cp.Client.Create(ctx, rs); err != nil {
		t.Fatalf("creating %s/%s: %v", rs.Namespace, rs.Name, err)
	}
	if len(status.Conditions) == 0 && status.AuthParams == nil {
		return
	}
	rs.Status = status
	if err := cp.Client.Status().Update(ctx, rs); err != nil {
		t.Fatalf("setting status of %s/%s: %v", rs.Namespace, rs.Name, err)
	}
}

func get(t *testing.T, ns, name string) *authv1beta1.ResourceSlice {
	t.Helper()
	var rs authv1beta1.ResourceSlice
	if err := cp.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil {
		t.Fatalf("getting %s/%s: %v", ns, name, err)
	}
	return &rs
}

// eventually polls cond every 50ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

func decided(ns string, names ...string) func() bool {
	return func() bool {
		for _, n := range names {
			var rs authv1beta1.ResourceSlice
			if err := cp.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: n}, &rs); err != nil || !conditions.IsDecided(&rs) {
				return false
			}
		}
		return true
	}
}

// statusPatches reads the API server's own counter of PATCH requests on
// resourceslices/status.
func statusPatches(t *testing.T) int {
	t.Helper()
	n, err := cp.RequestCount(context.Background(), "PATCH", "resourceslices", "status")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eventsFor lists the events regarding the named slice.
func eventsFor(t *testing.T, ns, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := cp.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func hasEvent(t *testing.T, ns, name, reason string) func() bool {
	return func() bool {
		for _, e := range eventsFor(t, ns, name) {
			if e.Reason == reason {
				return true
			}
		}
		return false
	}
}

// calls counts handler calls per slice name.
type calls struct {
	mu sync.Mutex
	n  map[string]int
	// total counts all calls.
	total atomic.Int64
}

func (c *calls) inc(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
	c.total.Add(1)
	return c.n[name]
}

func (c *calls) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}
