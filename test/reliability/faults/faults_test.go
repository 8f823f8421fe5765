package faults

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// seedEnv names the environment variable that overrides the fault seed.
const seedEnv = "FAULTS_SEED"

// defaultSeed is the seed of the fault sequence unless FAULTS_SEED says.
const defaultSeed = 1

// faultySetting is the faults test's setting: 5% of requests refused before
// sending, 3% throttled, one write in ten applied with its answer lost;
// three watches and event writes in ten refused, and the first watch of
// each resource; every watch cut within 5s, so that the informers watch
// again, often.
var faultySetting = faultRates{before: 0.05, throttled: 0.03, lost: 0.10, watch: 0.3, event: 0.3, cutWithin: 5 * time.Second}

// faultsRun is what one run of the faults scenario measured.
type faultsRun struct {
	slices int
	in     *injector
	// converge runs from the first slice's creation to the last 2xx
	// decision write; tail, from the last slice's creation.
	converge, tail time.Duration
	// wrong lists slices undecided or decided other than the handler
	// decides; liqoLost, slices whose Liqo fields differ from what the
	// Liqo writer last wrote.
	wrong, liqoLost []string
	// double counts 2xx status PATCHes beyond the first on a slice;
	// uncounted, decided slices without a counted one.
	double, uncounted int
	// quiet is whether no status write was applied in the settling window
	// after convergence; alive, whether the manager's Start had not
	// returned at the end.
	quiet, alive bool
	// serverPatches is the API server's count of status PATCHes during the
	// run.
	serverPatches int
	handlerCalls  int64
	// repeats are handler calls that saw the same inputs as the slice's
	// previous call (see callLog).
	repeats                       int
	liqoWrites, liqoGaveUp        int
	liqoErrs                      []error
	applied, answered, unanswered int
}

// TestFaultsDecideEverySliceOnce runs 300 slices of two classes (one
// accepting everything, one capped at 2 CPU) through a manager whose API
// calls fail at random, while a Liqo writer keeps rewriting Liqo's fields,
// and then the same without faults as the baseline. With faults, as
// without: every slice is decided as the handler decides, with exactly one
// status write; Liqo's fields are what it last wrote; the manager runs on.
func TestFaultsDecideEverySliceOnce(t *testing.T) {
	cp.Require(t)
	seed := faultSeed(t)
	base := runFaults(t, "base", faultRates{}, seed)
	faulty := runFaults(t, "faulty", faultySetting, seed)

	for _, r := range []struct {
		name string
		run  faultsRun
	}{{"baseline", base}, {"with faults", faulty}} {
		run := r.run
		assert.Empty(t, run.wrong, "%s: decisions lost or wrong", r.name)
		assert.Empty(t, run.liqoLost, "%s: Liqo's fields lost", r.name)
		assert.Zero(t, run.double, "%s: double decisions (2xx status PATCHes beyond one per slice)", r.name)
		assert.Zero(t, run.uncounted, "%s: decided slices whose decision write the transport did not see", r.name)
		assert.True(t, run.quiet, "%s: a status write was applied after every slice was decided", r.name)
		assert.True(t, run.alive, "%s: the manager's Start returned", r.name)
		assert.Empty(t, run.liqoErrs, "%s: the Liqo writer failed", r.name)
		assert.Positive(t, run.liqoWrites, "%s: the Liqo writer wrote nothing", r.name)
		assert.Equal(t, run.serverPatches, run.answered+run.unanswered,
			"%s: the API server's count of status PATCHes against the transport's", r.name)
	}
	for k := range numFaults {
		assert.Positive(t, faulty.in.count(k), "no %s fault was injected", faultNames[k])
	}
	assert.Zero(t, base.in.total(), "the baseline injected faults")

	// Repeats are reported, not asserted: a conflict's delayed retry that
	// fires after the Liqo writer's event already had the slice decided
	// again reconciles an unchanged slice, and a decided slice reconciled
	// is re-evaluated (one call, no write).
	ratio := faulty.converge.Seconds() / base.converge.Seconds()
	requests := faulty.in.requests.Load()
	t.Logf("RELIABILITY: faults slices=%d seed=%d requests=%d faults=%d (%.0f%%) %s decisions_lost=%d liqo_lost=%d double=%d converge=%s baseline=%s ratio=%.2f tail=%s baseline_tail=%s handler_calls=%d/%d repeated_inputs=%d/%d status_patches=%d/%d liqo_writes=%d/%d",
		faulty.slices, seed, requests, faulty.in.total(), 100*float64(faulty.in.total())/float64(max(requests, 1)), faultCounts(faulty.in),
		len(faulty.wrong), len(faulty.liqoLost), faulty.double,
		faulty.converge.Round(time.Millisecond), base.converge.Round(time.Millisecond), ratio,
		faulty.tail.Round(time.Millisecond), base.tail.Round(time.Millisecond),
		faulty.handlerCalls, base.handlerCalls, faulty.repeats, base.repeats, faulty.answered, base.answered, faulty.liqoWrites, base.liqoWrites)
}

// runFaults runs the scenario in namespaces and classes named after name:
// a manager on a configuration whose requests go through an injector with
// rates, 300 slices created as Liqo does, a Liqo writer rewriting them
// until every one is decided and a settling window has passed; then it
// reads what the server holds.
func runFaults(t *testing.T, name string, rates faultRates, seed int64) faultsRun {
	t.Helper()
	const (
		namespaces = 3
		perNS      = 100
		maxCPU     = 2
	)
	ctx := context.Background()
	open, capped2 := name+"-open", name+"-capped"
	var specs []sliceSpec
	for n := range namespaces {
		ns := fmt.Sprintf("faults-%s-%d", name, n)
		require.NoError(t, cp.CreateNamespace(ctx, ns))
		for i := range perNS {
			s := sliceSpec{ns: ns, name: fmt.Sprintf("s-%03d", i), class: open, cpu: 1 + (i/2)%4}
			if i%2 == 1 {
				s.class, s.maxCPU = capped2, maxCPU
			}
			specs = append(specs, s)
		}
	}

	in := newInjector(rates, seed)
	before := serverStatusPatches(t)
	var calls atomic.Int64
	inputs := newCallLog()
	mgr := testkit.StartManagerWith(t, in.config(cp.Config), testkit.ManagerOptions(t, cp.Scheme), func(mgr manager.Manager) error {
		for class, limit := range map[string]int64{open: 0, capped2: maxCPU} {
			if err := resourceslice.AddToManager(mgr, class, inputs.wrap(capped(limit, &calls)),
				resourceslice.WithoutTenantRule(),
				resourceslice.WithMaxConcurrentReconciles(4),
				resourceslice.WithRetryBackoff(10*time.Millisecond, 500*time.Millisecond)); err != nil {
				return err
			}
		}
		return nil
	})
	liqo := startLiqoWriter(t, cp.Client, seed+1)

	start := time.Now()
	require.NoError(t, createAll(ctx, cp.Client, specs, func(s sliceSpec) { liqo.add(s.key()) }))
	created := time.Now()
	waitDecided(t, cp.Client, specs)
	last := in.writes.lastApplied()
	run := faultsRun{slices: len(specs), in: in, converge: last.Sub(start), tail: last.Sub(created)}

	// A second decision would come from a retry of a write whose answer
	// was lost, within the backoff's 500ms cap: three seconds of Liqo
	// writes with no status write applied show there is none pending.
	applied, _, _ := in.writes.totals()
	run.quiet = poll.Holds(3*time.Second, func() bool {
		now, _, _ := in.writes.totals()
		return now == applied
	})
	liqo.stop()
	run.alive = mgr.Running()
	mgr.Stop()
	run.serverPatches = serverStatusPatches(t) - before
	run.handlerCalls, run.repeats = calls.Load(), inputs.count()
	run.liqoWrites, run.liqoGaveUp, run.liqoErrs = liqo.stats()
	run.applied, run.answered, run.unanswered = in.writes.totals()

	got, err := slicesOn(ctx, cp.Client, specs)
	require.NoError(t, err)
	for _, s := range specs {
		if why := s.wrongDecision(got[s.key().String()]); why != "" {
			run.wrong = append(run.wrong, s.key().String()+": "+why)
		}
		// What is counted: the status PATCHes on this slice that the
		// server answered 2xx, as the controller's own transport saw
		// them, including those whose answer the injector then hid.
		// Every status write of the controller goes through that
		// transport, and no one else PATCHes a slice's status (Liqo's
		// writer and CreateAsLiqo use PUT), so the count is every
		// write the server applied; a PATCH that got no answer at all
		// would make it inexact, and the comparison with the server's
		// own counter above shows there was none. The handler decides
		// a slice the same way every time, so one applied write is the
		// decision, and any more would each be a decision made again.
		switch n, _ := in.writes.of(s.key().String()); {
		case n > 1:
			run.double += n - 1
		case n == 0:
			run.uncounted++
		}
	}
	run.liqoLost = liqo.lost(got, specs)
	t.Logf("%s: %d slices decided in %s; handler calls %d (%d with the inputs of the slice's previous call); status PATCHes %d applied, %d answered (%d conflicts), %d unanswered, server counted %d; Liqo writes %d (%d given up on conflicts); faults %s",
		name, len(specs), run.converge.Round(time.Millisecond), run.handlerCalls, run.repeats, run.applied, run.answered, in.writes.conflicted(), run.unanswered,
		run.serverPatches, run.liqoWrites, run.liqoGaveUp, faultCounts(in))
	return run
}

// faultSeed returns the seed from FAULTS_SEED, or defaultSeed, and logs it.
func faultSeed(t *testing.T) int64 {
	t.Helper()
	seed := int64(defaultSeed)
	if v := os.Getenv(seedEnv); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "%s=%q is not an integer", seedEnv, v)
		seed = s
	}
	t.Logf("fault seed %d (set %s to replay another)", seed, seedEnv)
	return seed
}

// faultCounts prints the injected faults by kind.
func faultCounts(in *injector) string {
	parts := make([]string, 0, numFaults)
	for k := range numFaults {
		parts = append(parts, fmt.Sprintf("%s=%d", faultNames[k], in.count(k)))
	}
	return strings.Join(parts, " ")
}

// serverStatusPatches reads the shared API server's own count of PATCH
// requests on resourceslices/status.
func serverStatusPatches(t *testing.T) int {
	t.Helper()
	n, err := apiserver.RequestCount(context.Background(), cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)
	return n
}
