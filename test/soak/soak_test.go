package soak

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

const (
	// durationEnv overrides churnDefault (a Go duration).
	durationEnv  = "SLICECLASS_SOAK_DURATION"
	churnDefault = 3 * time.Minute
	// slicesEnv overrides slicesDefault, for trying the soak out smaller.
	slicesEnv     = "SLICECLASS_SOAK_SLICES"
	slicesDefault = 10000
	// eventsEnv sets the classes' WithDecisionEvents: none (the default),
	// denied or all; see startSoakManager.
	eventsEnv = "SLICECLASS_SOAK_EVENTS"

	nTenants       = 100
	silverMaxCPU   = 2
	reasonGranted  = "Granted"
	reasonTooLarge = "TooLarge"

	// The bounds the soak asserts. Heap is the median live heap of a window,
	// goroutines the most seen in it; the first window starts after the
	// warm-up, the first third of the churn.
	heapGrowthBound      = 1.25
	goroutineGrowthBound = 50
	// backlogBound is 30 s of creations: during the churn the controllers
	// are never that far behind.
	backlogBound = 30 * createsPerSecond
)

// The soak (the contract): 10000 slices (slicesEnv) of three
// classes, one with a budget, across 100 tenants, under continuous churn. The
// manager runs before the slices are created (so creation and decisions
// overlap, which keeps the soak within minutes on two cores; the cold start
// over a full cache is the bench's memory phase); the churn starts once
// they are all decided. After a warm-up the heap and goroutine count stay flat,
// the decision backlog stays bounded and drains when the churn stops, and
// every remaining slice ends decided as its tenant, class and budget say,
// with Liqo's fields as Liqo last wrote them.
func TestSoak(t *testing.T) {
	if cp == nil {
		t.Skipf("the soak runs with %s=1 (make soak)", soakEnv)
	}
	cp.Require(t)
	churnFor := fromEnv(t, durationEnv, churnDefault, time.ParseDuration)
	nSlices := fromEnv(t, slicesEnv, slicesDefault, strconv.Atoi)
	require.GreaterOrEqual(t, nSlices, 10*nTenants, "%s", slicesEnv)
	events := fromEnv(t, eventsEnv, resourceslice.DecisionEventsNone, parseEvents)
	// The bronze budget is below its ~nSlices/3 slices of 1 CPU, so some
	// always wait with BudgetExhausted and every release re-admits one.
	bronzeCPU := nSlices * 3 / 10
	ctx := context.Background()
	f := newFleet(nTenants, 4)

	began := time.Now()
	for _, tn := range f.tenants {
		require.NoError(t, cp.Client.Create(ctx, tn.namespaceObject()))
		require.NoError(t, cp.Client.Create(ctx, tn.tenantObject()))
	}

	// The manager, as a user would set it up.
	bronze, err := budget.New(classBronze, corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(bronzeCPU), resource.DecimalSI)})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	logs := &errorLog{}
	// Also what logs to controller-runtime's root logger rather than the
	// manager's (the informers' reflectors).
	ctrl.SetLogger(logr.New(errorSink{logs}))
	mgr := startSoakManager(t, bronze, reg, logs, events)
	s := &sampler{cache: mgr.GetClient(), reg: reg, start: time.Now()}
	s.setPhase("create")
	sampling, stopSampling := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		s.run(sampling)
	}()
	defer func() { stopSampling(); <-samplerDone }()

	// 1. The fleet: nSlices created as Liqo would, by 16 writers, with the
	// manager deciding them as they come; all decided before the churn.
	pre := newChurn(f, cp.Client, nSlices)
	failed, err := forEach(ctx, 16, nSlices, func(ctx context.Context, _ int) error {
		_, err := pre.create(ctx)
		return err
	})
	require.NoError(t, err, "%d of %d creations failed", failed, nSlices)
	created := time.Since(s.start)
	t.Logf("created %d slices as Liqo (object + status) in %d namespaces in %s", f.size(), nTenants, created.Round(time.Second))
	// Thousands of decisions: 1m24s on an idle machine of two cores.
	testkit.EventuallyScaled(t, testkit.Every(time.Second), 5, "every pre-created slice decided", allDecided(mgr.GetClient(), nSlices))
	initial := time.Since(s.start)
	t.Logf("the %d slices were all decided %s after the manager started", nSlices, initial.Round(time.Second))

	// 2. The churn.
	s.setPhase("churn")
	g := newChurn(f, cp.Client, nSlices)
	d0, err := decisionsTotal(reg)
	require.NoError(t, err)
	churnStart := time.Since(s.start)
	g.run(ctx, churnFor)
	churnEnd := time.Since(s.start)
	d1, err := decisionsTotal(reg)
	require.NoError(t, err)
	decisionRate := (d1 - d0) / (churnEnd - churnStart).Seconds()
	for _, st := range g.stats() {
		t.Log(st)
	}

	// 3. The churn stopped: the backlog drains (how soon is reported, not
	// asserted), then every slice settles: its decision matches its tenant,
	// class and budget (the last flips' re-evaluations, re-admissions).
	s.setPhase("drain")
	drainStart := time.Now()
	testkit.Every(time.Second).Eventually(t, "every slice decided after the churn", allDecided(mgr.GetClient(), -1))
	drained := time.Since(drainStart)
	var (
		problems []string
		tally    map[string]int
	)
	settled := wait.PollUntilContextTimeout(ctx, 2*time.Second, testwait.Timeout, true, func(ctx context.Context) (bool, error) {
		problems, tally = checkFinal(ctx, t, f, bronze, bronzeCPU)
		return len(problems) == 0, nil
	}) == nil
	if !settled {
		t.Errorf("%d slices not as expected %s after the churn; first ones:\n%s", len(problems), testwait.Timeout,
			strings.Join(problems[:min(len(problems), 20)], "\n"))
	}
	t.Logf("final decisions by tenant condition, class and decision: %v", tally)
	s.setPhase("settled")
	s.takeSample(ctx)
	stopSampling()
	<-samplerDone
	mgr.Stop()

	samples, err := s.all()
	require.NoError(t, err)
	t.Logf("samples of this process, which hosts both the manager and the churn generator (kube-apiserver and etcd "+
		"are processes of their own); heap after a forced GC; slices, undecided and backlog (undecided for more than %s) "+
		"from the manager's cache:\n%s", backlogAge, table(samples))
	t.Logf("manager logged %d errors%s", logs.count(), logs.first())
	assertFlat(t, samples, g, nSlices, decisionRate, drained)
	t.Logf("wall time: %s (creation %s, all decided at %s, churn %s, drain %s)",
		time.Since(began).Round(time.Second), created.Round(time.Second), initial.Round(time.Second),
		churnFor, drained.Round(time.Second))
}

// assertFlat checks the churn's samples against the bounds (judge) and the
// generator's failures, and prints the summary line.
func assertFlat(t *testing.T, samples []sample, g *churn, nSlices int, decisionRate float64, drained time.Duration) {
	t.Helper()
	v, err := judge(samples)
	require.NoError(t, err)
	var ops int64
	for _, st := range g.stats() {
		ops += st.done.Load()
	}
	fmt.Printf("RELIABILITY: soak %d slices, %d churn operations: heap first %.1f MiB last %.1f MiB (x%.2f, bound x%.2f; slope %+.2f MiB/min; peak %.1f MiB), "+
		"goroutines first %d last %d (bound +%d), decisions %.1f/s during churn, max backlog %d (bound %d), drained in %s\n",
		nSlices, ops, v.first.heapMiB, v.last.heapMiB, v.last.heapMiB/v.first.heapMiB, heapGrowthBound, v.heapSlope, v.peakHeapMiB,
		v.first.goroutines, v.last.goroutines, goroutineGrowthBound, decisionRate, v.maxBacklog, backlogBound, drained.Round(time.Second))
	for _, p := range v.problems() {
		t.Error(p)
	}
	for _, st := range g.stats() {
		// The generator's own writes may fail on an overloaded API server;
		// more than 1% means the soak did not churn as described.
		assert.LessOrEqual(t, 100*st.failed.Load(), st.done.Load()+st.failed.Load(), "%s", st)
	}
}

// fromEnv parses the environment variable name with parse; def when unset.
func fromEnv[T any](t *testing.T, name string, def T, parse func(string) (T, error)) T {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	out, err := parse(v)
	require.NoError(t, err, "%s", name)
	return out
}

// allDecided reports, from the manager's cache, whether every served slice
// is decided and, with want ≥ 0, whether there are want of them.
func allDecided(c client.Reader, want int) func() bool {
	return func() bool {
		n, undecided, _, err := countSlices(context.Background(), c)
		return err == nil && undecided == 0 && (want < 0 || n == want)
	}
}
