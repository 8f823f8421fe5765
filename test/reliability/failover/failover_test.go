package failover

import (
	"context"
	"fmt"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/classlease"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// budgetedClass registers class with a budget of total CPU of its own (a
// replica is a pod: budgets are never shared between replicas) and a class
// Lease in ns.
func budgetedClass(class, ns string, total int) func(mgr manager.Manager) error {
	return func(mgr manager.Manager) error {
		b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(total), resource.DecimalSI)})
		if err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, class, grantAll,
			resourceslice.WithBudget(b),
			resourceslice.WithClassLease(ns),
			resourceslice.WithoutTenantRule(),
			resourceslice.WithMaxConcurrentReconciles(4),
			resourceslice.WithDecisionEvents(resourceslice.DecisionEventsNone))
	}
}

// Leader failover: slices stream in while replica a leads; a crashes (no
// API access, lease not released) once it has decided some; replica b takes
// over and decides the rest. Every slice is decided by exactly one status
// patch, the budget (rebuilt by b from what the cluster holds) is never
// over-committed, and the class Lease moves to b.
//
// Why the patch count is exact: each replica's every request goes through
// its own tap, which counts a status PATCH when the server answers 2xx, that
// is when the server applied it. A crashed replica's requests fail before
// they leave the process; one that left before the crash is let finish and
// counted when its answer comes (see crash). Slices are created undecided and Liqo's status write is a
// PUT, so each decided slice took at least one counted PATCH: a total equal
// to the number of slices means one each.
//
// It runs without and with EnableWarmup: a warm standby's cache and queue
// are filled before it leads, and its budget must still be rebuilt from
// what the cluster holds when it does.
func TestLeaderFailover(t *testing.T) {
	cp.Require(t)
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warmup=%t", warm), func(t *testing.T) { leaderFailover(t, warm) })
	}
}

func leaderFailover(t *testing.T, warm bool) {
	const (
		slices     = 200
		total      = 150 // CPU: the last 50 slices wait with BudgetExhausted
		crashAfter = 40  // a's decisions before it crashes
	)
	class := fmt.Sprintf("failover-%t", warm)
	ns := testkit.Namespace(t, cp, class)
	watcher := watchCommitted(t, ns)
	serverBefore, err := apiserver.RequestCount(context.Background(), cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)

	spec := func(name string) replicaSpec {
		return replicaSpec{name: name, electionID: "leader-" + ns, namespace: ns, warmup: warm, register: budgetedClass(class, ns, total)}
	}
	a := startReplica(t, spec("replica-a"))
	testkit.Eventually(t, "replica-a to lead", a.leads)
	b := startReplica(t, spec("replica-b"))

	// Slices stream in, 20 a second, across the failover.
	produced := make(chan error, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := range slices {
			<-tick.C
			if err := slicetest.CreateAsLiqo(context.Background(), cp.Client, oneCPU(ns, fmt.Sprintf("s-%03d", i), class)); err != nil {
				produced <- err
				return
			}
		}
		produced <- nil
	}()

	testkit.Eventually(t, fmt.Sprintf("replica-a to decide %d slices", crashAfter),
		func() bool { return a.tap.patches.Load() >= crashAfter })
	testkit.Eventually(t, "replica-a to hold the class Lease",
		func() bool { return leaseHolder(t, ns, classlease.Name(class)) == "replica-a" })
	require.False(t, b.leads(), "replica-b leads while replica-a is alive")

	vanished := a.crash(t)
	fromA := a.tap.patches.Load()

	testkit.Eventually(t, "replica-b to lead", b.leads)
	require.NoError(t, <-produced, "creating slices")
	testkit.Eventually(t, "every slice decided", func() bool { return decidedCount(t, ns) == slices })
	testkit.Eventually(t, "the class Lease held by replica-b",
		func() bool { return leaseHolder(t, ns, classlease.Name(class)) == "replica-b" })
	firstByB := at(b.tap.firstPatch.Load()).Sub(vanished)
	allByB := at(b.tap.lastPatch.Load()).Sub(vanished)
	tookOver := at(b.elected.Load()).Sub(vanished)

	// Exactly one decision per slice, a's and b's together.
	fromB := b.tap.patches.Load()
	assert.Equal(t, int64(slices), fromA+fromB, "accepted status patches (a %d, b %d) against slices", fromA, fromB)
	assert.Equal(t, fromA, a.tap.patches.Load(), "a crashed replica wrote after its crash")
	serverAfter, err := apiserver.RequestCount(context.Background(), cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, int64(serverAfter-serverBefore), fromA+fromB, "the API server saw fewer status PATCHes than the replicas had answers for")

	// The budget: exactly total admitted, the rest waiting, never more held.
	accepted, exhausted := 0, 0
	var held resource.Quantity
	all := listSlices(t, ns)
	for i := range all {
		rs := &all[i]
		switch {
		case conditions.IsAccepted(rs):
			accepted++
			held.Add(*rs.Status.Resources.Cpu())
		case conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).Reason == budget.ReasonExhausted:
			exhausted++
		default:
			t.Errorf("slice %s: decided neither Accepted nor %s: %+v", rs.Name, budget.ReasonExhausted, conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources))
		}
	}
	assert.Equal(t, total, accepted, "Accepted slices: the budget was rebuilt wrongly or over-committed")
	assert.Equal(t, slices-total, exhausted, "slices waiting with %s", budget.ReasonExhausted)
	assert.LessOrEqual(t, held.MilliValue(), int64(total*1000), "CPU held by Accepted slices")
	testkit.Eventually(t, "the watcher to see every acceptance", func() bool {
		now, _, _, _ := watcher.snapshot()
		return now == held.MilliValue()
	})
	_, peak, events, werr := watcher.snapshot()
	require.NoError(t, werr)
	assert.LessOrEqual(t, peak, int64(total*1000), "CPU held by Accepted slices at some watched event")

	t.Logf("RELIABILITY: failover warmup=%t slices=%d budget_cpu=%d decided_by_old_leader=%d decided_by_new_leader=%d status_patches=%d server_status_patches=%d lease=%s/%s/%s failover_to_new_leader=%s failover_to_first_decision=%s failover_to_all_decided=%s peak_held_cpu=%dm watched_events=%d",
		warm, slices, total, fromA, fromB, fromA+fromB, serverAfter-serverBefore,
		leaseDuration, renewDeadline, retryPeriod,
		tookOver.Round(time.Millisecond), firstByB.Round(time.Millisecond), allByB.Round(time.Millisecond), peak, events)
}
