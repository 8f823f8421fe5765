package faults

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// TestAPIServerRestartMidBacklog restarts the API server while one slow
// worker is deciding a backlog of 200 slices, and creates 100 more once it
// is back. The same manager process, whose Start never returns, decides
// every slice, once.
//
// "Once" means: every slice gets exactly one status write that the API
// server applied. It is counted on the controller's own transport, as 2xx
// answers to status PATCHes on the slice (the API server's counter would
// do too, but it restarts from zero and misses what was sent between the
// last reading and the stop). A PATCH in flight when the server stops may
// be applied with its answer lost: the transport then sees an error, not a
// 2xx, so such a slice may show no 2xx write, and only if one of its
// PATCHes went unanswered. The handler may be called more than once per
// slice (after a failed write, or a watch event): a call is not a decision,
// a write is.
func TestAPIServerRestartMidBacklog(t *testing.T) {
	const (
		backlog = 200
		later   = 100
		class   = "restart"
		ns      = "restart"
	)
	ctx := context.Background()
	plane := controlplane.Start(t)
	require.NoError(t, plane.CreateNamespace(ctx, ns))
	specs := make([]sliceSpec, 0, backlog+later)
	for i := range backlog + later {
		specs = append(specs, sliceSpec{ns: ns, name: fmt.Sprintf("s-%03d", i), class: class, cpu: 1 + i%4})
	}
	require.NoError(t, createAll(ctx, plane.Client, specs[:backlog], func(sliceSpec) {}))

	in := newInjector(faultRates{}, 0) // counts, injects nothing
	var calls atomic.Int64
	decide := capped(0, &calls)
	slow := func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctrl.Result{}, ctx.Err()
		}
		return decide(ctx, rs)
	}
	mgr := testkit.StartManagerWith(t, in.config(plane.Config), testkit.ManagerOptions(t, plane.Scheme), func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, handler.Func(slow),
			resourceslice.WithoutTenantRule(),
			resourceslice.WithRetryBackoff(10*time.Millisecond, time.Second))
	})
	appliedNow := func() int { n, _, _ := in.writes.totals(); return n }
	poll.Eventually(t, "a fifth of the backlog decided", func() bool { return appliedNow() >= backlog/5 })

	serverBefore, err := apiserver.RequestCount(ctx, plane.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)
	atRestart := appliedNow()
	restart := time.Now()
	require.NoError(t, apiserver.Restart(plane), "restarting kube-apiserver with the manager's watches open")
	restartTook := time.Since(restart)
	atBack := appliedNow()
	require.Less(t, atBack, backlog, "the backlog was decided before the API server was back: slow the handler")
	require.NoError(t, createAll(ctx, plane.Client, specs[backlog:], func(sliceSpec) {}))

	waitDecided(t, plane.Client, specs)
	last := in.writes.lastApplied()
	settled := appliedNow()
	quiet := poll.Holds(3*time.Second, func() bool { return appliedNow() == settled })
	alive := mgr.Running()
	mgr.Stop()
	serverAfter, err := apiserver.RequestCount(ctx, plane.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)

	got, err := slicesOn(ctx, plane.Client, specs)
	require.NoError(t, err)
	var wrong []string
	double, unseen, uncounted := 0, 0, 0
	for _, s := range specs {
		if why := s.wrongDecision(got[s.key().String()]); why != "" {
			wrong = append(wrong, s.key().String()+": "+why)
		}
		switch n, unanswered := in.writes.of(s.key().String()); {
		case n > 1:
			double += n - 1
		case n == 0 && unanswered > 0:
			unseen++ // applied as the server stopped, answer lost
		case n == 0:
			uncounted++
		}
	}
	applied, answered, unanswered := in.writes.totals()
	assert.Empty(t, wrong, "decisions lost or wrong")
	assert.Zero(t, double, "double decisions (2xx status PATCHes beyond one per slice)")
	assert.Zero(t, uncounted, "decided slices with neither a 2xx nor an unanswered status PATCH")
	assert.True(t, quiet, "a status write was applied after every slice was decided")
	assert.True(t, alive, "the manager's Start returned")

	recovered := last.Sub(restart)
	t.Logf("restart: %d of %d backlog slices decided when the restart began, %d when the server was back after %s; all %d decided %s after the restart began; handler calls %d; status PATCHes %d applied, %d answered, %d unanswered (%d slices decided by one), server counted %d before the restart + %d after",
		atRestart, backlog, atBack, restartTook.Round(time.Millisecond), len(specs), recovered.Round(time.Millisecond),
		calls.Load(), applied, answered, unanswered, unseen, serverBefore, serverAfter)
	t.Logf("RELIABILITY: restart slices=%d backlog=%d decided_at_restart=%d restart=%s restart_to_all_decided=%s decisions_lost=%d double=%d unanswered=%d handler_calls=%d",
		len(specs), backlog, atRestart, restartTook.Round(time.Millisecond), recovered.Round(time.Millisecond),
		len(wrong), double, unanswered, calls.Load())
}
