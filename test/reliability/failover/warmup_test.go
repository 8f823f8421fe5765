package failover

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// fullEnv, when set to 1, runs the EnableWarmup measurement at full size.
const fullEnv = "SLICECLASS_RELIABILITY_FULL"

// freshSlices is how many slices arrive while nobody leads, in each round.
const freshSlices = 20

// failoverRun is one measured failover.
type failoverRun struct {
	// toLeader, toFirst and toAll run from the leader's crash to the
	// standby leading, to its first decision, and to its decision of the
	// last fresh slice.
	toLeader, toFirst, toAll time.Duration
}

// plainClass registers class with no budget and no class Lease (the warmup
// measurement isolates the informers), counting handler calls in calls.
func plainClass(class string, calls *atomic.Int64) func(mgr manager.Manager) error {
	return func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, counting(grantAll, calls),
			resourceslice.WithoutTenantRule(),
			resourceslice.WithMaxConcurrentReconciles(4),
			resourceslice.WithDecisionEvents(resourceslice.DecisionEventsNone))
	}
}

// EnableWarmup: a backlog of decided slices of the class is in the cluster
// (what an old leader leaves behind); in each round a leader serves it, the
// standby waits, the leader crashes, freshSlices new slices arrive while
// nobody leads, and the standby takes over. With EnableWarmup the standby
// has listed and watched the slices before it leads; without it, it lists
// them only once elected, and re-evaluates the whole backlog from its
// initial list. Rounds alternate the setting so that the machine's load
// falls on both alike. The test asserts correctness only (who read what
// when, one decision per fresh slice); the times are logged.
//
// Default: 200 slices, one round per setting. With
// SLICECLASS_RELIABILITY_FULL=1: 2000 slices, three rounds per setting
// (a few minutes on a loaded 2-core machine).
func TestLeaderFailoverWarmup(t *testing.T) {
	cp.Require(t)
	backlog, rounds := 200, 1
	if os.Getenv(fullEnv) == "1" {
		backlog, rounds = 2000, 3
	}
	const class = "warmup"
	// Round namespaces sort after the backlog's, so a standby's initial
	// list returns the fresh slices after the backlog.
	backlogNS := testkit.Namespace(t, cp, "warmup-backlog")
	var decided []*authv1beta1.ResourceSlice
	for i := range backlog {
		// Exactly what the handler decides, so that re-evaluating it writes
		// nothing.
		rs := oneCPU(backlogNS, fmt.Sprintf("b-%04d", i), class)
		grant(rs)
		decided = append(decided, rs)
	}
	createAll(t, decided)

	runs := map[bool][]failoverRun{}
	for round := range rounds {
		for _, warm := range []bool{false, true} {
			served := backlog + freshSlices*len(runs[false]) + freshSlices*len(runs[true])
			run := warmupRound(t, class, round, warm, served)
			runs[warm] = append(runs[warm], run)
			t.Logf("RELIABILITY: warmup=%t round=%d backlog=%d fresh=%d failover_to_new_leader=%s failover_to_first_decision=%s failover_to_all_decided=%s leader_to_first_decision=%s",
				warm, round, backlog, freshSlices, run.toLeader.Round(time.Millisecond), run.toFirst.Round(time.Millisecond), run.toAll.Round(time.Millisecond),
				(run.toFirst - run.toLeader).Round(time.Millisecond))
		}
	}
	pick := func(warm bool, f func(failoverRun) time.Duration) time.Duration {
		var ds []time.Duration
		for _, r := range runs[warm] {
			ds = append(ds, f(r))
		}
		return median(ds)
	}
	first := func(r failoverRun) time.Duration { return r.toFirst }
	all := func(r failoverRun) time.Duration { return r.toAll }
	// The lease wait is the same with and without warmup; what warmup can
	// change starts once the standby leads.
	led := func(r failoverRun) time.Duration { return r.toFirst - r.toLeader }
	summary := fmt.Sprintf("backlog=%d rounds=%d lease=%s/%s/%s", backlog, rounds, leaseDuration, renewDeadline, retryPeriod)
	for _, m := range []struct {
		name string
		f    func(failoverRun) time.Duration
	}{{"first", first}, {"all", all}, {"leader_to_first", led}} {
		off, on := pick(false, m.f), pick(true, m.f)
		summary += fmt.Sprintf(" median_%s_off=%s median_%s_on=%s ratio_%s=%.2f",
			m.name, off.Round(time.Millisecond), m.name, on.Round(time.Millisecond), m.name, ratio(on, off))
	}
	t.Logf("RELIABILITY: warmup_summary %s", summary)
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// warmupRound runs one failover of class, whose served slices are all
// decided, with EnableWarmup set to warm and returns its times.
func warmupRound(t *testing.T, class string, round int, warm bool, served int) failoverRun {
	t.Helper()
	ns := testkit.Namespace(t, cp, fmt.Sprintf("warmup-round-%d-%t", round, warm))
	var aCalls, bCalls atomic.Int64
	spec := func(name string, calls *atomic.Int64) replicaSpec {
		return replicaSpec{name: name, electionID: "leader-" + ns, namespace: ns, warmup: warm, register: plainClass(class, calls)}
	}
	a := startReplica(t, spec("replica-a", &aCalls))
	// The leader has re-evaluated every slice (a steady state, as a leader
	// that has run for a while) when the standby starts.
	testkit.Eventually(t, fmt.Sprintf("replica-a to lead and re-evaluate the %d slices", served),
		func() bool { return aCalls.Load() >= int64(served) })
	b := startReplica(t, spec("replica-b", &bCalls))
	// A manager runs leader election after it has started its warmup.
	testkit.Eventually(t, "replica-b to ask for the leader-election Lease",
		func() bool { return b.tap.electionTried.Load() != 0 })
	if warm {
		testkit.Eventually(t, "the standby (EnableWarmup) to start its slice informer before it leads",
			func() bool { return b.tap.sliceRead.Load() != 0 })
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		require.True(t, b.mgr.GetCache().WaitForCacheSync(ctx), "the standby's cache did not sync")
	}
	require.False(t, b.leads(), "replica-b leads while replica-a is alive")
	if !warm {
		require.Zero(t, b.tap.sliceRead.Load(), "without EnableWarmup the standby read slices before it leads")
	}

	vanished := a.crash(t)
	var fresh []*authv1beta1.ResourceSlice
	for i := range freshSlices {
		fresh = append(fresh, oneCPU(ns, fmt.Sprintf("f-%02d", i), class))
	}
	createAll(t, fresh)
	// Behind the new leader's initial list of the whole backlog (2000
	// slices with SLICECLASS_RELIABILITY_FULL): bulk work.
	testkit.EventuallyScaled(t, testkit.Poller{}, 2, "replica-b to decide the fresh slices", func() bool { return decidedCount(t, ns) == freshSlices })

	assert.Zero(t, a.tap.patches.Load(), "replica-a wrote, though the backlog was decided")
	assert.Equal(t, int64(freshSlices), b.tap.patches.Load(), "status patches of replica-b: one per fresh slice, none for the backlog")
	testkit.EventuallyScaled(t, testkit.Poller{}, 2, "replica-b to re-evaluate every slice", func() bool { return bCalls.Load() >= int64(served+freshSlices) })
	run := failoverRun{
		toLeader: at(b.elected.Load()).Sub(vanished),
		toFirst:  at(b.tap.firstPatch.Load()).Sub(vanished),
		toAll:    at(b.tap.lastPatch.Load()).Sub(vanished),
	}
	require.NoError(t, b.stop(), "stopping replica-b")
	return run
}

// ClassSet and EnableWarmup: a standby whose classes are served through a
// ClassSet starts their informers before it leads (ClassSet.Warmup), as
// AddToManager's controllers do. It failed before ClassSet implemented
// manager.WarmupRunnable: the set starts its controllers from its own
// Start, which the manager calls only on the leader.
func TestClassSetStandbyWarmsUp(t *testing.T) {
	cp.Require(t)
	const class = "warmup-set"
	ns := testkit.Namespace(t, cp, "warmup-classset")
	spec := func(name string) replicaSpec {
		return replicaSpec{name: name, electionID: "leader-" + ns, namespace: ns, warmup: true,
			register: func(mgr manager.Manager) error {
				cs, err := resourceslice.NewClassSet(mgr, resourceslice.WithoutTenantRule())
				if err != nil {
					return err
				}
				return cs.Serve(class, grantAll)
			}}
	}
	a := startReplica(t, spec("replica-a"))
	testkit.Eventually(t, "replica-a to lead", a.leads)
	b := startReplica(t, spec("replica-b"))
	testkit.Eventually(t, "replica-b to ask for the leader-election Lease",
		func() bool { return b.tap.electionTried.Load() != 0 })
	testkit.Eventually(t, "the standby (EnableWarmup, ClassSet) to start its slice informer before it leads",
		func() bool { return b.tap.sliceRead.Load() != 0 })
	require.False(t, b.leads(), "replica-b leads while replica-a is alive")
}
