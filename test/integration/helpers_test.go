package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// accept returns a handler that grants what is asked with reason, counting
// calls in c (may be nil).
func accept(reason string, c *calls) handler.Func {
	return func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		if c != nil {
			c.inc(rs.Name)
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, reason, "granted by "+reason)
		return ctrl.Result{}, nil
	}
}

// sliceIn builds a slice of class in namespace ns requesting one CPU, as
// Liqo leaves it once authenticated; opts change it.
func sliceIn(ns, name, class string, opts ...slicetest.SliceOption) *authv1beta1.ResourceSlice {
	base := []slicetest.SliceOption{slicetest.WithNamespace(ns), slicetest.WithClass(class), slicetest.WithRequest(corev1.ResourceCPU, "1")}
	return slicetest.NewSlice(name, append(base, opts...)...)
}

// fastBackoff makes retries quick enough for a test to see several.
func fastBackoff() resourceslice.Option {
	return resourceslice.WithRetryBackoff(10*time.Millisecond, 200*time.Millisecond)
}

// create creates the slice as Liqo would (slicetest.CreateAsLiqo): the
// object, then its status with a PUT, so that the API server's PATCH counter
// counts only the controller.
func create(t *testing.T, rs *authv1beta1.ResourceSlice) {
	t.Helper()
	require.NoError(t, slicetest.CreateAsLiqo(context.Background(), cp.Client, rs))
}

// get reads the slice from the API server.
func get(t *testing.T, ns, name string) *authv1beta1.ResourceSlice {
	t.Helper()
	var rs authv1beta1.ResourceSlice
	require.NoError(t, cp.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rs))
	return &rs
}

// waitForDecision waits up to testwait.Timeout for the slice's decision
// (slicetest.WaitForDecision) and returns the decided slice.
func waitForDecision(t *testing.T, ns, name string) *authv1beta1.ResourceSlice {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	rs, err := slicetest.WaitForDecision(ctx, cp.Client, types.NamespacedName{Namespace: ns, Name: name})
	require.NoError(t, err)
	return rs
}

// decided reports whether every named slice has a decision.
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
	n, err := apiserver.RequestCount(context.Background(), cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)
	return n
}

// eventsFor lists the events regarding the named slice.
func eventsFor(t *testing.T, ns, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(ns)))
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// hasEvent reports whether the named slice has an event with reason.
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
