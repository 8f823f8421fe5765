package integration

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/classlease"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Classes at run time (issue 10): a ClassSet serves and stops classes while
// the manager runs, other classes undisturbed; class Leases show who serves
// what; the unserved reporter flags slices nobody serves.

// One class streams slices while another is served and stopped in a loop:
// every streamed slice is decided once (how promptly, against a baseline
// stream, is logged: speed is for benchmarks), and nothing re-lists slices;
// the looping class decides its waiting slices after a Serve, nothing after
// Stop, and a Serve with another handler re-evaluates its slices, writing
// each once.
func TestClassSetServeStopAtRunTime(t *testing.T) {
	cp.Require(t)
	const (
		steady, dyn = "cs-steady", "cs-dyn"
		streamEvery = 50 * time.Millisecond
		toggleEvery = 150 * time.Millisecond
		// maxDelay is how much serving and stopping another class is
		// expected to add to a steady slice's create→decision time, beyond
		// what the same stream sees with no class coming or going. Each
		// Serve replays the informer's whole store to the new class's
		// handler and decides its waiting slices: CPU the steady class
		// shares. The slices past it are logged, not failed: on a loaded
		// machine any bound on a delay is flaky. A dropped event still
		// fails the test (a slice never decided), and so does a restart
		// (a decision written twice).
		maxDelay = time.Second
	)
	ns := testkit.Namespace(t, cp, "classset-runtime")
	log := watchDecisions(t, ns)
	var cs *resourceslice.ClassSet
	handled := &firstCalls{at: map[string]time.Time{}}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		if cs, err = resourceslice.NewClassSet(mgr); err != nil {
			return err
		}
		return cs.Serve(steady, handled.wrap(accept("Steady", nil)))
	})
	create(t, sliceIn(ns, "steady-warm-up", steady))
	testkit.Eventually(t, "the steady class serving", decided(ns, "steady-warm-up"))

	// Baseline: the same stream with no class coming or going, so that what
	// a loaded machine adds on its own is not blamed on the loop below.
	base := &sliceStream{createdAt: map[string]time.Time{}}
	<-base.run(ns, steady, "base", 60, streamEvery)
	require.Empty(t, base.errors(), "creating the baseline stream")
	testkit.Eventually(t, "every baseline slice decided", decided(ns, base.names()...))
	baseline := log.delays(t, base)

	// The stream on the steady class, and the serve/stop loop on dyn, with
	// a new dyn slice waiting at each turn.
	listsBefore := resourceSliceLists(t)
	stream := &sliceStream{createdAt: map[string]time.Time{}}
	streamDone := stream.run(ns, steady, "steady", 200, streamEvery)
	var (
		loopErrs []error
		loopDyn  []string
		serves   int
		maxStop  time.Duration
	)
	toggle := func(served bool) error {
		if !served {
			serves++
			return cs.Serve(dyn, accept("DynA", nil))
		}
		start := time.Now()
		defer func() { maxStop = max(maxStop, time.Since(start)) }()
		return cs.Stop(context.Background(), dyn)
	}
	tick := time.NewTicker(toggleEvery)
	served := false
loop:
	for i := 0; ; i++ {
		select {
		case <-streamDone:
			break loop
		case <-tick.C:
		}
		if err := toggle(served); err != nil {
			loopErrs = append(loopErrs, err)
		}
		served = !served
		name := fmt.Sprintf("dyn-loop-%03d", i)
		if err := createSlice(sliceIn(ns, name, dyn)); err != nil {
			loopErrs = append(loopErrs, err)
		}
		loopDyn = append(loopDyn, name)
	}
	tick.Stop()
	if served {
		require.NoError(t, toggle(served))
	}
	require.Empty(t, loopErrs, "creating slices and serving/stopping %s", dyn)
	require.Empty(t, stream.errors(), "creating the steady stream")
	require.Equal(t, []string{steady}, cs.Classes(), "only %s is served after the loop", steady)
	assert.Equal(t, listsBefore, resourceSliceLists(t), "serving and stopping a class never re-lists slices from the API server")
	steadyNames := stream.names()
	testkit.Eventually(t, "every steady slice decided", decided(ns, steadyNames...))
	testkit.Consistently(t, time.Second, "no steady slice written after its decision", func() bool {
		for _, name := range steadyNames {
			if n := log.get(name).writesAfterDecision; n > 0 {
				t.Logf("steady slice %s: %d writes after its decision", name, n)
				return false
			}
		}
		return true
	})

	// Steady: decided exactly once each; how promptly is logged.
	slow := 0
	for _, name := range steadyNames {
		s := log.get(name)
		created := stream.created(name)
		d := s.decidedAt.Sub(created)
		if d > maxDelay+quantile(baseline, 0.99) {
			slow++
			t.Logf("steady slice %s decided %s after its creation (handler called after %s)", name, d, handled.get(name).Sub(created))
		}
		assert.Equal(t, 1, s.decisionWrites, "steady slice %s: decision written once", name)
		assert.Zero(t, s.writesAfterDecision, "steady slice %s: no write after its decision", name)
		assert.Equal(t, "Accepted/Steady", s.decision, "steady slice %s", name)
	}
	delays := log.delays(t, stream)
	t.Logf("steady class create→decision: baseline (%d slices) p50 %s, p95 %s, p99 %s, max %s; during %d Serve and as many Stop calls of %s (%d slices) p50 %s, p95 %s, p99 %s, max %s, %d slices over %s; slowest Stop %s",
		len(baseline), quantile(baseline, 0.5), quantile(baseline, 0.95), quantile(baseline, 0.99), baseline[len(baseline)-1],
		serves, dyn, len(delays), quantile(delays, 0.5), quantile(delays, 0.95), quantile(delays, 0.99), delays[len(delays)-1],
		slow, maxDelay+quantile(baseline, 0.99), maxStop)

	// Stopped: new dyn slices wait, undecided.
	var waiting []string
	for i := range 5 {
		name := fmt.Sprintf("dyn-wait-%d", i)
		create(t, sliceIn(ns, name, dyn))
		waiting = append(waiting, name)
	}
	testkit.Consistently(t, 3*time.Second, "dyn slices created after Stop stay undecided", undecided(ns, waiting...))

	// Served: every dyn slice decided, without a restart.
	allDyn := append(append([]string(nil), loopDyn...), waiting...)
	start := time.Now()
	require.NoError(t, cs.Serve(dyn, accept("DynA", nil)))
	testkit.Eventually(t, "every dyn slice decided by DynA after Serve", allDecided(ns, "Accepted/DynA", allDyn...))
	t.Logf("%d waiting %s slices decided %s after Serve", len(allDyn), dyn, time.Since(start))

	// Stopped again: decisions stay as they are; new slices wait.
	require.NoError(t, cs.Stop(context.Background(), dyn))
	var late []string
	for i := range 3 {
		name := fmt.Sprintf("dyn-late-%d", i)
		create(t, sliceIn(ns, name, dyn))
		late = append(late, name)
	}
	testkit.Consistently(t, 3*time.Second, "after Stop, new dyn slices undecided and old decisions kept", func() bool {
		return undecided(ns, late...)() && allDecided(ns, "Accepted/DynA", allDyn...)()
	})

	// Served with another handler: every dyn slice re-evaluated, written once.
	allDyn = append(allDyn, late...)
	before := map[string]int{}
	for _, name := range allDyn {
		before[name] = log.get(name).writes
	}
	var dynB calls
	start = time.Now()
	require.NoError(t, cs.Serve(dyn, accept("DynB", &dynB)))
	testkit.Eventually(t, "every dyn slice re-decided by DynB", allDecided(ns, "Accepted/DynB", allDyn...))
	t.Logf("%d %s slices re-evaluated %s after Serve with another handler", len(allDyn), dyn, time.Since(start))
	testkit.Consistently(t, 2*time.Second, "dyn slices keep DynB", allDecided(ns, "Accepted/DynB", allDyn...))
	for _, name := range allDyn {
		assert.Equal(t, 1, log.get(name).writes-before[name], "dyn slice %s: one write for the new decision", name)
		assert.Positive(t, dynB.get(name), "dyn slice %s: the new handler was called", name)
	}
	assert.Equal(t, []string{dyn, steady}, cs.Classes())

	// Served again with the same policy: every slice re-evaluated, none
	// written (nothing changes).
	require.NoError(t, cs.Stop(context.Background(), dyn))
	for _, name := range allDyn {
		before[name] = log.get(name).writes
	}
	var again calls
	require.NoError(t, cs.Serve(dyn, accept("DynB", &again)))
	testkit.Eventually(t, "every dyn slice re-evaluated by the same policy", func() bool {
		for _, name := range allDyn {
			if again.get(name) == 0 {
				return false
			}
		}
		return true
	})
	testkit.Consistently(t, 2*time.Second, "no dyn slice written when its decision does not change", func() bool {
		for _, name := range allDyn {
			if n := log.get(name).writes - before[name]; n != 0 {
				t.Logf("dyn slice %s: %d writes", name, n)
				return false
			}
		}
		return true
	})
}

// Stop lets a decision in flight finish and be written, then returns; the
// class decides nothing more.
func TestClassSetStopFinishesInFlight(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "classset-inflight")
	entered, release := make(chan string, 10), make(chan struct{})
	slow := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		entered <- rs.Name
		<-release
		return accept("Slow", nil)(ctx, rs)
	})
	var cs *resourceslice.ClassSet
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		cs, err = resourceslice.NewClassSet(mgr)
		return err
	})
	require.NoError(t, cs.Serve("inflight", slow))
	create(t, sliceIn(ns, "busy", "inflight"))
	select {
	case name := <-entered:
		require.Equal(t, "busy", name)
	case <-time.After(testwait.Timeout):
		t.Fatalf("the handler was not called within %s", testwait.Timeout)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- cs.Stop(context.Background(), "inflight") }()
	testkit.Consistently(t, 500*time.Millisecond, "Stop waiting for the decision in flight", func() bool { return len(stopped) == 0 })
	assert.Empty(t, cs.Classes(), "a stopping class is no longer listed")
	close(release)
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(testwait.Timeout):
		t.Fatalf("Stop did not return within %s of the handler returning", testwait.Timeout)
	}
	assert.True(t, decision(ns, "busy", "Accepted/Slow")(), "the decision in flight is written before Stop returns")

	create(t, sliceIn(ns, "after-stop", "inflight"))
	testkit.Consistently(t, 2*time.Second, "a stopped class decides nothing", undecided(ns, "after-stop"))
	assert.Empty(t, entered, "the handler is not called after Stop")
}

// The duplicate rules on a real manager, before and after it starts
// (issue 43): a set refuses a class it serves (ErrClassRegistered); two
// sets, or a set and AddToManager, naming one class meet
// controller-runtime's controller-name check (on here, as by default; it is
// process-wide, so the classes are named for this run); and a refused
// registration disturbs nothing.
func TestClassSetDuplicateRules(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "classset-dup")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	dupStatic, dupDynamic := "dup-static-"+run, "dup-dynamic-"+run
	var cs, other *resourceslice.ClassSet
	var static, dynamic calls
	opts := testkit.ManagerOptions(t, cp.Scheme)
	opts.Controller.SkipNameValidation = nil // controller-runtime's default: names are checked
	testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
		var err error
		if err = resourceslice.AddToManager(mgr, dupStatic, accept("Static", &static)); err != nil {
			return err
		}
		if cs, err = resourceslice.NewClassSet(mgr); err != nil {
			return err
		}
		if other, err = resourceslice.NewClassSet(mgr); err != nil {
			return err
		}
		if err = cs.Serve(dupDynamic, accept("Dynamic", &dynamic)); err != nil {
			return err
		}
		err = cs.Serve(dupStatic, accept("Intruder", nil))
		assert.ErrorContains(t, err, "already exists", "before start: a ClassSet serving an AddToManager class")
		err = resourceslice.AddToManager(mgr, dupDynamic, accept("Intruder", nil))
		assert.ErrorContains(t, err, "already exists", "before start: AddToManager on a ClassSet's class")
		return nil
	})

	err := cs.Serve(dupStatic, accept("Intruder", nil))
	require.Error(t, err, "after start: a ClassSet serving an AddToManager class")
	assert.ErrorContains(t, err, "already exists")
	assert.ErrorContains(t, err, fmt.Sprintf("%q", dupStatic))
	err = other.Serve(dupDynamic, accept("Intruder", nil))
	require.Error(t, err, "after start: a second set serving the first set's class")
	assert.ErrorContains(t, err, "already exists")
	err = cs.Serve(dupDynamic, accept("Intruder", nil))
	assert.ErrorIs(t, err, resourceslice.ErrClassRegistered, "after start: the same set serving its class twice")

	create(t, sliceIn(ns, "s", dupStatic))
	create(t, sliceIn(ns, "d", dupDynamic))
	testkit.Eventually(t, "each slice decided by its one registration", func() bool {
		return decision(ns, "s", "Accepted/Static")() && decision(ns, "d", "Accepted/Dynamic")()
	})
	testkit.Consistently(t, time.Second, "no refused registration decides anything", func() bool {
		return decision(ns, "s", "Accepted/Static")() && decision(ns, "d", "Accepted/Dynamic")()
	})

	// Stopped by its set, the class is served again by it (the name is the
	// set's), which re-evaluates its slice.
	require.NoError(t, cs.Stop(context.Background(), dupDynamic))
	require.NoError(t, cs.Serve(dupDynamic, accept("Again", nil)), "a stopped class is served again by its set")
	testkit.Eventually(t, "the set decides the class again", decision(ns, "d", "Accepted/Again"))
	assert.Equal(t, []string{dupDynamic}, cs.Classes())
	assert.Empty(t, other.Classes())
}

// WithClassLease: a labelled Lease with a holder while the class is served,
// renewed, deleted on Stop and on a clean shutdown.
func TestClassSetLease(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	leases := testkit.Namespace(t, cp, "classset-leases")
	var cs *resourceslice.ClassSet
	// The holder is read as a class is registered (a second replica of a
	// test process registering meanwhile must not rename it).
	t.Setenv("POD_NAME", "holder-at-registration")
	stop := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		if cs, err = resourceslice.NewClassSet(mgr, resourceslice.WithClassLease(leases)); err != nil {
			return err
		}
		err = cs.Serve("lease-a", accept("Granted", nil))
		t.Setenv("POD_NAME", "holder-later")
		return err
	}).Stop
	require.NoError(t, cs.Serve("lease-b", accept("Granted", nil)), "served at run time")
	require.NoError(t, cs.Serve("lease-none", accept("Granted", nil), resourceslice.WithClassLease(leases)), "the class's own option")

	var first coordinationv1.Lease
	for _, class := range []string{"lease-a", "lease-b", "lease-none"} {
		testkit.Eventually(t, "the Lease of "+class, leaseExists(leases, class))
		l := getLease(t, leases, class)
		assert.Equal(t, class, l.Labels[classlease.Label], "the Lease is labelled with its class")
		assert.NotEmpty(t, ptr.Deref(l.Spec.HolderIdentity, ""), "the Lease names its holder")
		assert.Equal(t, int32(classlease.Duration/time.Second), ptr.Deref(l.Spec.LeaseDurationSeconds, 0))
		require.NotNil(t, l.Spec.RenewTime)
		if class == "lease-a" {
			first = *l
			assert.Equal(t, "holder-at-registration", ptr.Deref(l.Spec.HolderIdentity, ""), "the holder as the class was registered")
		} else {
			assert.Equal(t, "holder-later", ptr.Deref(l.Spec.HolderIdentity, ""), "the holder as the class was served")
		}
	}
	var list coordinationv1.LeaseList
	require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(leases), client.HasLabels{classlease.Label}))
	assert.Len(t, list.Items, 3, "kubectl get leases -l %s lists the served classes", classlease.Label)

	testkit.Eventually(t, "the Lease of lease-a renewed", func() bool {
		l := getLease(t, leases, "lease-a")
		return l.Spec.RenewTime.After(first.Spec.RenewTime.Time)
	})
	renewed := getLease(t, leases, "lease-a")
	assert.Equal(t, ptr.Deref(first.Spec.HolderIdentity, ""), ptr.Deref(renewed.Spec.HolderIdentity, ""), "the same holder renews")
	assert.True(t, first.Spec.AcquireTime.Equal(renewed.Spec.AcquireTime), "a renewal keeps acquireTime")
	t.Logf("lease-a renewed %s after its previous renewal", renewed.Spec.RenewTime.Sub(first.Spec.RenewTime.Time))

	require.NoError(t, cs.Stop(context.Background(), "lease-a"))
	assert.False(t, leaseExists(leases, "lease-a")(), "Stop deletes the Lease before it returns")
	assert.True(t, leaseExists(leases, "lease-b")(), "stopping one class leaves the others' Leases")

	stop()
	assert.False(t, leaseExists(leases, "lease-b")(), "a clean shutdown deletes the Leases")
	assert.False(t, leaseExists(leases, "lease-none")(), "a clean shutdown deletes the Leases")
}

// The unserved reporter flags, once and only after its delay, slices whose
// class no live Lease serves; never those of a served class nor Liqo's own;
// a class's series are deleted when a controller appears, and a class whose
// controller stops, or whose Lease expires, becomes unserved.
func TestUnservedReporter(t *testing.T) {
	cp.Require(t)
	const after = 2 * time.Second
	ctx := context.Background()
	leases := testkit.Namespace(t, cp, "classset-rep-leases")
	ns := testkit.Namespace(t, cp, "classset-unserved")

	// A hand-made Lease, long expired.
	require.NoError(t, cp.Client.Create(ctx, handLease(leases, "rep-expired", time.Now().Add(-time.Hour), 5)))

	var cs *resourceslice.ClassSet
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := resourceslice.AddUnservedReporter(mgr, leases, after); err != nil {
			return err
		}
		var err error
		if cs, err = resourceslice.NewClassSet(mgr, resourceslice.WithClassLease(leases)); err != nil {
			return err
		}
		if err := cs.Serve("rep-served", accept("Granted", nil)); err != nil {
			return err
		}
		return cs.Serve("rep-gone", accept("Granted", nil))
	})
	testkit.Eventually(t, "the served classes' Leases", func() bool {
		return leaseExists(leases, "rep-served")() && leaseExists(leases, "rep-gone")()
	})

	// Another, live for 4 seconds only: a controller that died without
	// deleting it.
	crashLease := handLease(leases, "rep-crash", time.Now(), 4)
	require.NoError(t, cp.Client.Create(ctx, crashLease))
	crashExpiry := crashLease.Spec.RenewTime.Add(4 * time.Second)

	slicesByClass := map[string]string{
		"orphan": "rep-orphan", "late": "rep-late", "expired": "rep-expired", "crash": "rep-crash",
		"served": "rep-served", "gone": "rep-gone", "none": "", "liqo-default": "default",
	}
	// The delay runs from each slice's creation: the window in which none
	// may be flagged ends 3/4 of it after the first one was created (on a
	// loaded machine the creations alone can take a good part of it).
	firstCreated := time.Now()
	for name, class := range slicesByClass {
		create(t, sliceIn(ns, name, class))
	}
	created := time.Now()
	orphanRV := get(t, ns, "orphan").ResourceVersion
	unservedNow := []string{"orphan", "late", "expired"}
	neverFlagged := []string{"served", "none", "liqo-default"}

	window := after*3/4 - time.Since(firstCreated)
	if window < after/4 {
		t.Logf("creating the slices took %s: the no-flag window is %s", created.Sub(firstCreated), window)
	}
	if window > 0 {
		testkit.Consistently(t, window, "no slice flagged before the delay", func() bool {
			return noUnservedEvent(t, ns, slices.Concat(unservedNow, neverFlagged, []string{"crash", "gone"})...)
		})
	}
	for _, name := range unservedNow {
		testkit.Eventually(t, "a NoClassController event on "+name, hasEvent(t, ns, name, "NoClassController"))
	}
	t.Logf("unserved slices flagged %s after creation (delay %s)", time.Since(created), after)
	for _, name := range unservedNow {
		evs := unservedEvents(t, ns, name)
		if assert.Len(t, evs, 1, name) {
			assert.Equal(t, corev1.EventTypeWarning, evs[0].Type, name)
			assert.Contains(t, evs[0].Note, fmt.Sprintf("%q", slicesByClass[name]), "the event names the class")
		}
		assert.Equal(t, 1.0, unservedGauge(t, "sliceclass_unserved_slices", slicesByClass[name]), "%s counts its slice", slicesByClass[name])
	}
	assert.GreaterOrEqual(t, unservedGauge(t, "sliceclass_unserved_oldest_seconds", "rep-orphan"), after.Seconds(), "the oldest unserved slice's age")
	testkit.Eventually(t, "the served class decides its slice", decision(ns, "served", "Accepted/Granted"))

	// A controller for rep-late appears: its series are deleted, no event.
	require.NoError(t, cs.Serve("rep-late", accept("Granted", nil)))
	testkit.Eventually(t, "the series of rep-late are deleted", func() bool {
		return unservedSeries(t, "rep-late") == 0
	})
	testkit.Eventually(t, "rep-late decides its slice", decision(ns, "late", "Accepted/Granted"))

	// rep-gone's only controller stops: Stop deletes the Lease, the slice is
	// flagged after the delay.
	require.NoError(t, cs.Stop(context.Background(), "rep-gone"))
	require.False(t, leaseExists(leases, "rep-gone")(), "Stop deletes the Lease")
	testkit.Eventually(t, "a NoClassController event on gone", hasEvent(t, ns, "gone", "NoClassController"))
	testkit.Eventually(t, "the gauge counts rep-gone", func() bool {
		return unservedGauge(t, "sliceclass_unserved_slices", "rep-gone") == 1
	})

	// rep-crash's Lease expires: flagged only after expiry plus the delay.
	testkit.Eventually(t, "a NoClassController event on crash", hasEvent(t, ns, "crash", "NoClassController"))
	crashEvent := unservedEvents(t, ns, "crash")[0]
	assert.False(t, crashEvent.EventTime.Time.Before(crashExpiry.Add(after-time.Second)),
		"flagged at %s, before its Lease expired (%s) plus the delay", crashEvent.EventTime.Time, crashExpiry)

	testkit.Consistently(t, 3*time.Second, "one event per unserved slice, none on served or Liqo's own slices", func() bool {
		for _, name := range []string{"orphan", "late", "expired", "gone", "crash"} {
			if n := len(unservedEvents(t, ns, name)); n != 1 {
				t.Logf("slice %s: %d NoClassController events", name, n)
				return false
			}
		}
		return noUnservedEvent(t, ns, neverFlagged...) && unservedSeries(t, "rep-late") == 0
	})
	for _, class := range []string{"rep-served", "", "default"} {
		assert.Zero(t, unservedSeries(t, class), "class %q is never counted", class)
	}
	assert.Equal(t, orphanRV, get(t, ns, "orphan").ResourceVersion, "the reporter writes nothing to slices")
}

// A consumer writes any spec.class it likes. Slices of many made-up
// classes, flagged and then deleted, leave no series behind: every one is
// gone once the manager's cache sees the slices gone (normally within one
// reporter period: logged, not asserted).
func TestUnservedReporterForgetsMadeUpClasses(t *testing.T) {
	cp.Require(t)
	const (
		after  = 2 * time.Second
		period = time.Second // the reporter checks every after/4, and at least every second
		n      = 60
		prefix = "made-up-"
	)
	ctx := context.Background()
	leases := testkit.Namespace(t, cp, "made-up-leases")
	ns := testkit.Namespace(t, cp, "made-up-classes")
	madeUp := func(class string) bool { return strings.HasPrefix(class, prefix) }
	var cache client.Reader
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		cache = mgr.GetClient()
		return resourceslice.AddUnservedReporter(mgr, leases, after)
	})
	for i := range n {
		create(t, sliceIn(ns, fmt.Sprintf("s-%d", i), fmt.Sprintf("%s%d", prefix, i)))
	}
	testkit.Eventually(t, "every made-up class flagged, with its two series", func() bool {
		return unservedSeriesWhere(t, madeUp) == 2*n
	})

	require.NoError(t, cp.Client.DeleteAllOf(ctx, &authv1beta1.ResourceSlice{}, client.InNamespace(ns)))
	testkit.Eventually(t, "the manager's cache sees every slice gone", func() bool {
		var list authv1beta1.ResourceSliceList
		return cache.List(ctx, &list, client.InNamespace(ns)) == nil && len(list.Items) == 0
	})
	gone := time.Now()
	for unservedSeriesWhere(t, madeUp) > 0 && time.Since(gone) < testwait.Timeout {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(gone)
	t.Logf("series of %d deleted classes gone %s after the cache saw their slices gone (period %s)", n, took.Round(time.Millisecond), period)
	assert.Zero(t, unservedSeriesWhere(t, madeUp), "no series of a deleted class is left")
}

// decisionLog watches a namespace's slices on the API server and records,
// per slice, when its decision first appeared and how often it was written.
type decisionLog struct {
	mu     sync.Mutex
	slices map[string]*sliceRecord
}

type sliceRecord struct {
	// decidedAt is when the watch first saw a Resources condition.
	decidedAt time.Time
	// decision is the current "Status/Reason".
	decision string
	// writes counts updates; decisionWrites those that changed the
	// decision; writesAfterDecision those after the first decision.
	writes, decisionWrites, writesAfterDecision int
}

func watchDecisions(t *testing.T, ns string) *decisionLog {
	t.Helper()
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns))
	require.NoError(t, err)
	l := &decisionLog{slices: map[string]*sliceRecord{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			if rs, ok := ev.Object.(*authv1beta1.ResourceSlice); ok {
				l.observe(ev.Type, rs, time.Now())
			}
		}
	}()
	t.Cleanup(func() { wi.Stop(); cancel(); <-done })
	return l
}

func (l *decisionLog) observe(typ watch.EventType, rs *authv1beta1.ResourceSlice, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.slices[rs.Name]
	if s == nil {
		s = &sliceRecord{}
		l.slices[rs.Name] = s
	}
	if typ == watch.Modified {
		s.writes++
		if !s.decidedAt.IsZero() {
			s.writesAfterDecision++
		}
	}
	d := ""
	if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
		d = string(c.Status) + "/" + c.Reason
	}
	if d != s.decision {
		s.decision = d
		s.decisionWrites++
		if s.decidedAt.IsZero() {
			s.decidedAt = at
		}
	}
}

func (l *decisionLog) get(name string) sliceRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.slices[name]; s != nil {
		return *s
	}
	return sliceRecord{}
}

// createSlice is create for goroutines other than the test's: it returns
// the error instead of failing the test.
func createSlice(rs *authv1beta1.ResourceSlice) error {
	return slicetest.CreateAsLiqo(context.Background(), cp.Client, rs)
}

// undecided reports whether none of the named slices has a decision.
func undecided(ns string, names ...string) func() bool {
	return func() bool {
		for _, n := range names {
			var rs authv1beta1.ResourceSlice
			if err := cp.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, &rs); err != nil || conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources) != nil {
				return false
			}
		}
		return true
	}
}

// allDecided reports whether every named slice's decision is want
// ("Status/Reason").
func allDecided(ns, want string, names ...string) func() bool {
	return func() bool {
		for _, n := range names {
			if !decision(ns, n, want)() {
				return false
			}
		}
		return true
	}
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// leaseExists reports whether class's Lease exists in ns.
func leaseExists(ns, class string) func() bool {
	return func() bool {
		var l coordinationv1.Lease
		err := cp.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: classlease.Name(class)}, &l)
		return err == nil
	}
}

func getLease(t *testing.T, ns, class string) *coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	require.NoError(t, cp.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: classlease.Name(class)}, &l))
	return &l
}

// handLease is a class Lease written by hand, renewed at renew for
// seconds.
func handLease(ns, class string, renew time.Time, seconds int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: classlease.Name(class), Labels: map[string]string{classlease.Label: class}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("crashed-pod"),
			LeaseDurationSeconds: ptr.To(seconds),
			AcquireTime:          ptr.To(metav1.NewMicroTime(renew)),
			RenewTime:            ptr.To(metav1.NewMicroTime(renew)),
		},
	}
}

// unservedEvents lists the NoClassController events regarding the slice.
func unservedEvents(t *testing.T, ns, name string) []eventsv1.Event {
	t.Helper()
	var out []eventsv1.Event
	for _, e := range eventsFor(t, ns, name) {
		if e.Reason == "NoClassController" {
			out = append(out, e)
		}
	}
	return out
}

// noUnservedEvent reports whether none of the named slices has a
// NoClassController event.
func noUnservedEvent(t *testing.T, ns string, names ...string) bool {
	for _, n := range names {
		if len(unservedEvents(t, ns, n)) > 0 {
			t.Logf("slice %s flagged unserved", n)
			return false
		}
	}
	return true
}

// unservedGauge reads a reporter gauge for class from controller-runtime's
// metrics registry (0 when the series does not exist).
func unservedGauge(t *testing.T, metric, class string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "class" && lp.GetValue() == class {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// unservedSeries counts the unserved reporter's series, of both gauges,
// of the class (in controller-runtime's registry).
func unservedSeries(t *testing.T, class string) int {
	t.Helper()
	return unservedSeriesWhere(t, func(c string) bool { return c == class })
}

// unservedSeriesWhere counts the unserved reporter's series, of both
// gauges, whose class matches.
func unservedSeriesWhere(t *testing.T, match func(class string) bool) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range families {
		if mf.GetName() != classlease.MetricUnservedSlices && mf.GetName() != classlease.MetricUnservedOldest {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "class" && match(lp.GetValue()) {
					n++
				}
			}
		}
	}
	return n
}

// resourceSliceLists is the API server's count of LIST requests on
// ResourceSlices.
func resourceSliceLists(t *testing.T) int {
	t.Helper()
	n, err := apiserver.RequestCount(context.Background(), cp.Config, "LIST", "resourceslices", "")
	require.NoError(t, err)
	return n
}

// sliceStream creates slices of one class at a steady pace and remembers
// when it created each.
type sliceStream struct {
	mu        sync.Mutex
	createdAt map[string]time.Time
	errs      []error
}

// run creates n slices named prefix-NNN, one every every, and closes the
// returned channel when done.
func (s *sliceStream) run(ns, class, prefix string, n int, every time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range n {
			<-tick.C
			name := fmt.Sprintf("%s-%03d", prefix, i)
			s.mu.Lock()
			s.createdAt[name] = time.Now()
			s.mu.Unlock()
			if err := createSlice(sliceIn(ns, name, class)); err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, err)
				s.mu.Unlock()
			}
		}
	}()
	return done
}

func (s *sliceStream) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return mapKeys(s.createdAt)
}

func (s *sliceStream) created(name string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createdAt[name]
}

func (s *sliceStream) errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errs
}

// delays returns the stream's create→decision times, sorted; every slice
// must have been seen decided.
func (l *decisionLog) delays(t *testing.T, s *sliceStream) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, name := range s.names() {
		at := l.get(name).decidedAt
		require.False(t, at.IsZero(), "slice %s: no decision seen by the watch", name)
		out = append(out, at.Sub(s.created(name)))
	}
	slices.Sort(out)
	return out
}

// quantile returns the q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(float64(len(sorted)-1)*q)]
}

// firstCalls records when a handler was first called for each slice.
type firstCalls struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (f *firstCalls) wrap(h handler.Func) handler.Func {
	return func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		f.mu.Lock()
		if _, ok := f.at[rs.Name]; !ok {
			f.at[rs.Name] = time.Now()
		}
		f.mu.Unlock()
		return h(ctx, rs)
	}
}

func (f *firstCalls) get(name string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at[name]
}

// Serving and stopping a class leaves nothing behind on the manager's
// informers: after many cycles the process runs no more goroutines than
// before (a handler left on a shared informer keeps two running). On a
// server whose ResourceSlice schema has status.class, each class also
// watches the status.class view, and must leave it too.
func TestClassSetServeStopLeavesNothingBehind(t *testing.T) {
	cp.Require(t)
	for _, withStatusClass := range []bool{false, true} {
		t.Run(fmt.Sprintf("statusClass=%t", withStatusClass), func(t *testing.T) {
			if withStatusClass {
				extendCRDWithStatusClass(t)
			}
			ns := testkit.Namespace(t, cp, fmt.Sprintf("classset-leak-%t", withStatusClass))
			var cs *resourceslice.ClassSet
			testkit.StartManager(t, cp, func(mgr manager.Manager) error {
				var err error
				cs, err = resourceslice.NewClassSet(mgr)
				return err
			})
			// cycle serves the class, waits until it decides a new slice
			// (its sources are running), and stops it.
			cycle := func(i int) {
				require.NoError(t, cs.Serve("leak", accept("Granted", nil)))
				name := fmt.Sprintf("leak-%03d", i)
				create(t, sliceIn(ns, name, "leak"))
				testkit.Eventually(t, "the class serving "+name, decided(ns, name))
				require.NoError(t, cs.Stop(context.Background(), "leak"))
			}
			const warmUp, cycles = 3, 20
			for i := range warmUp {
				cycle(i)
			}
			before := runtime.NumGoroutine()
			for i := warmUp; i < warmUp+cycles; i++ {
				cycle(i)
			}
			limit := before + cycles/2
			testkit.Eventually(t, fmt.Sprintf("at most %d goroutines (%d before %d Serve/Stop cycles)", limit, before, cycles), func() bool {
				return runtime.NumGoroutine() <= limit
			})
			t.Logf("goroutines: %d before %d Serve/Stop cycles, %d after", before, cycles, runtime.NumGoroutine())
		})
	}
}

// A class stopped in a ClassSet keeps what its Accepted slices hold in a
// shared budget: they still hold it in the cluster, so another class must
// not be admitted into it (found in review: Stop used to release it). The
// budget follows the cluster, not the class: a slice deleted while its class
// is stopped is released at once, and the waiting slice admitted into it.
func TestClassSetStopKeepsBudgetHoldings(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "classset-budget")
	b, err := budget.New("classset-shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})
	require.NoError(t, err)
	var cs *resourceslice.ClassSet
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		var err error
		cs, err = resourceslice.NewClassSet(mgr, resourceslice.WithBudget(b), fastBackoff())
		return err
	})
	const holder, other = "budget-holder", "budget-other"
	require.NoError(t, cs.Serve(holder, accept("Held", nil)))
	require.NoError(t, cs.Serve(other, accept("Other", nil)))
	create(t, sliceIn(ns, "h1", holder))
	create(t, sliceIn(ns, "h2", holder))
	testkit.Eventually(t, "the holder's slices accepted", allDecided(ns, "Accepted/Held", "h1", "h2"))
	create(t, sliceIn(ns, "o1", other))
	denied := "Denied/" + budget.ReasonExhausted
	testkit.Eventually(t, "the other class's slice waiting for the budget", decision(ns, "o1", denied))

	require.NoError(t, cs.Stop(context.Background(), holder))
	testkit.Consistently(t, 3*time.Second, "the stopped class's slices still hold the budget: o1 keeps waiting",
		func() bool {
			used := usedCPU(b)
			return decision(ns, "o1", denied)() && used.Cmp(resource.MustParse("2")) == 0
		})

	require.NoError(t, cp.Client.Delete(context.Background(), get(t, ns, "h1")))
	testkit.Eventually(t, "h1's holding released when it is deleted, though its class is stopped, and o1 admitted into it",
		decision(ns, "o1", "Accepted/Other"))
	require.NoError(t, cs.Serve(holder, accept("Held", nil)))
	testkit.Consistently(t, 2*time.Second, "h2 kept its grant when its class is served again, and the budget is full, not over",
		func() bool {
			used := usedCPU(b)
			return decision(ns, "h2", "Accepted/Held")() && used.Cmp(resource.MustParse("2")) == 0
		})
}

// usedCPU is the CPU b's holders use.
func usedCPU(b *budget.Budget) resource.Quantity {
	return b.Used()[corev1.ResourceCPU]
}
