package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testkit"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// The budget's books and the controller defaults under the paths issue 26
// reproduced: each test here failed on the code before it.

// TestManagerControllerDefaultsApply: a class that does not set
// WithMaxConcurrentReconciles decides as many slices at once as the
// manager's Controller.MaxConcurrentReconciles says.
func TestManagerControllerDefaultsApply(t *testing.T) {
	cp.Require(t)
	const workers = 4
	ns, class := "books-defaults", "books-defaults"
	require.NoError(t, cp.CreateNamespace(context.Background(), ns))
	var inFlight, peak atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "granted")
		return ctrl.Result{}, nil
	})
	opts := testkit.ManagerOptions(t, cp.Scheme)
	opts.Controller.MaxConcurrentReconciles = workers
	testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, h, resourceslice.WithoutTenantRule())
	})
	t.Cleanup(open) // registered after the manager's stop, so it runs before it
	for i := range 2 * workers {
		create(t, sliceIn(ns, fmt.Sprintf("d-%d", i), class))
	}
	testkit.Every(20*time.Millisecond).Eventually(t, 30*time.Second, fmt.Sprintf("%d handler calls at once", workers), func() bool {
		return inFlight.Load() == workers
	})
	open()
	names := make([]string, 2*workers)
	for i := range names {
		names[i] = fmt.Sprintf("d-%d", i)
	}
	testkit.Every(50*time.Millisecond).Eventually(t, 30*time.Second, "every slice decided", decided(ns, names...))
	assert.Equal(t, int64(workers), peak.Load(), "at most the manager's MaxConcurrentReconciles at once")
}
