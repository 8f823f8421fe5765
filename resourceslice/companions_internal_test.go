package resourceslice

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// Issue 29: what a manager's classes share lives in one object, gone with
// the manager (issue 43: the ClassSet the user holds, not a slot found
// again through the manager). Starting and stopping 100 managers, each
// serving a budgeted class (AddToManager, a set of one) and a ClassSet,
// leaves nothing behind: each set's shared state is empty once its manager
// stops, none of it outlives its manager, and the goroutines return to
// where they were.
func TestCompanionsGoWithTheirManager(t *testing.T) {
	cp := controlplane.Start(t)
	const managers = 100
	grant := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	settle := func() int {
		runtime.GC()
		return ourGoroutines()
	}
	var alive []weak.Pointer[companions]
	var before int
	for i := range managers {
		func() {
			opts := envkit.ManagerOptions(t, cp.Scheme)
			opts.Metrics.BindAddress = "0"
			mgr, err := manager.New(cp.Config, opts)
			require.NoError(t, err)
			b, err := budget.New("gold", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
			require.NoError(t, err)
			reg := WithMetricsRegisterer(prometheus.NewRegistry())
			require.NoError(t, AddToManager(mgr, "gold", grant, WithBudget(b), reg))
			cs, err := NewClassSet(mgr, reg)
			require.NoError(t, err)
			require.NoError(t, cs.Serve("silver", grant, WithBudget(b)))

			mc := cs.mc
			require.Positive(t, mc.size(), "the set holds its classes' shared state while the manager runs")
			alive = append(alive, weak.Make(mc))

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			syncCtx, cancelSync := context.WithTimeout(ctx, testwait.Timeout)
			synced := mgr.GetCache().WaitForCacheSync(syncCtx)
			cancelSync()
			require.True(t, synced, "manager %d: cache synced", i)
			<-mgr.Elected()
			cancel()
			require.NoError(t, <-done)
			assert.Zero(t, mc.size(), "manager %d: its companions are empty once it stopped", i)
		}()
		if i == 0 {
			before = settle() // after one manager: client-go's shared transports exist
		}
	}

	deadline := time.Now().Add(testwait.Timeout)
	for {
		left, goroutines := 0, settle()
		for _, w := range alive {
			if w.Value() != nil {
				left++
			}
		}
		if (left == 0 && goroutines <= before+10) || time.Now().After(deadline) {
			assert.Zero(t, left, "companions outliving their stopped managers")
			assert.LessOrEqual(t, goroutines, before+10, "goroutines after %d managers (after the first: %d)", managers, before)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ourGoroutines counts the process's goroutines but those of a known
// client-go leak: a watch filter (watch.Filter, used by controller-runtime's
// metadata informers) whose loop outlives its stopped watch when nobody
// drains it (kubernetes/kubernetes#113254). A few managers of a hundred
// leave one each, by timing; the shutdown test's goleak check ignores the
// same function.
func ourGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && !strings.Contains(g, "k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop") {
			n++
		}
	}
	return n
}
