package soak

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

const (
	// durationEnv overrides churnDefault (a Go duration).
	durationEnv  = "SLICECLASS_SOAK_DURATION"
	churnDefault = 3 * time.Minute
	// slicesEnv overrides slicesDefault, for trying the soak out smaller.
	slicesEnv     = "SLICECLASS_SOAK_SLICES"
	slicesDefault = 10000
	// eventsEnv sets the classes' WithDecisionEvents: none (the default),
	// denied or all; see startManager.
	eventsEnv = "SLICECLASS_SOAK_EVENTS"

	nTenants       = 100
	silverMaxCPU   = 2
	reasonGranted  = "Granted"
	reasonTooLarge = "TooLarge"

	// The bounds the soak asserts. Heap is the mean live heap of a window,
	// goroutines the most seen in it; the first window starts after the
	// warm-up, the first third of the churn.
	heapGrowthBound      = 1.25
	goroutineGrowthBound = 50
	// backlogBound is 30 s of creations: during the churn the controllers
	// are never that far behind.
	backlogBound = 30 * createsPerSecond
	// drainTimeout: every slice decided this soon after the churn stops.
	drainTimeout = 60 * time.Second
	// settleTimeout: every slice's decision matches its tenant, class and
	// budget this soon after (the last flips' re-evaluations, re-admissions).
	settleTimeout = 2 * time.Minute
)

// The soak (the contract): 10000 slices (slicesEnv) of three classes, one with
// a budget, across 100 tenants, under continuous churn. The slices are
// created before the manager starts, so the manager's start is a cold list
// of 10000 and a backlog of 10000 decisions; the churn starts once they
// are all decided. After a warm-up the heap and goroutine count stay flat,
// the decision backlog stays bounded and drains when the churn stops, and
// every remaining slice ends decided as its tenant, class and budget say,
// with Liqo's fields as Liqo last wrote them.
func TestSoak(t *testing.T) {
	if cp == nil {
		t.Skipf("the soak runs with %s=1 (make soak)", soakEnv)
	}
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
	pre := newChurn(f, cp.Client, nSlices)
	failed, err := forEach(ctx, 16, nSlices, func(ctx context.Context, _ int) error {
		_, err := pre.create(ctx)
		return err
	})
	require.NoError(t, err, "%d of %d creations failed", failed, nSlices)
	created := time.Since(began)
	t.Logf("created %d slices as Liqo (object + status) in %d namespaces in %s", f.size(), nTenants, created.Round(time.Second))

	// The manager, as a user would set it up.
	bronze, err := budget.New(classBronze, corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(bronzeCPU), resource.DecimalSI)})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	logs := &errorLog{}
	// Also what logs to controller-runtime's root logger rather than the
	// manager's (the informers' reflectors).
	ctrl.SetLogger(logr.New(errorSink{logs}))
	mgr, stopManager := startManager(t, bronze, reg, logs, events)
	s := &sampler{cache: mgr.GetClient(), reg: reg, start: time.Now()}
	s.setPhase("initial")
	sampling, stopSampling := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		s.run(sampling)
	}()
	defer func() { stopSampling(); <-samplerDone }()

	// 1. The cold backlog: every pre-created slice decided.
	eventually(t, 15*time.Minute, "every pre-created slice decided", allDecided(mgr.GetClient(), nSlices))
	initial := time.Since(s.start)
	t.Logf("manager decided the %d pre-created slices in %s", nSlices, initial.Round(time.Second))

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

	// 3. The churn stopped: the backlog drains, then every slice settles.
	s.setPhase("drain")
	drainStart := time.Now()
	eventually(t, drainTimeout, "every slice decided after the churn", allDecided(mgr.GetClient(), -1))
	drained := time.Since(drainStart)
	var (
		problems []string
		tally    map[string]int
	)
	settled := wait.PollUntilContextTimeout(ctx, 2*time.Second, settleTimeout, true, func(ctx context.Context) (bool, error) {
		problems, tally = checkFinal(ctx, t, f, bronze, bronzeCPU)
		return len(problems) == 0, nil
	}) == nil
	if !settled {
		t.Errorf("%d slices not as expected %s after the churn; first ones:\n%s", len(problems), settleTimeout,
			strings.Join(problems[:min(len(problems), 20)], "\n"))
	}
	t.Logf("final decisions by tenant condition, class and decision: %v", tally)
	s.setPhase("settled")
	s.takeSample(ctx)
	stopSampling()
	<-samplerDone
	stopManager()

	samples, err := s.all()
	require.NoError(t, err)
	t.Logf("samples (heap after GC; slices, undecided and backlog from the manager's cache):\n%s", table(samples))
	t.Logf("manager logged %d errors%s", logs.count(), logs.first())
	assertFlat(t, samples, g, nSlices, decisionRate, drained)
	t.Logf("wall time: %s (creation %s, cold decisions %s, churn %s, drain %s)",
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
	fmt.Printf("RELIABILITY: soak %d slices, %d churn operations: heap first %.1f MiB last %.1f MiB (x%.2f, bound x%.2f; peak %.1f MiB, cold start), "+
		"goroutines first %d last %d (bound +%d), decisions %.1f/s during churn, max backlog %d (bound %d), drained in %s\n",
		nSlices, ops, v.first.heapMiB, v.last.heapMiB, v.last.heapMiB/v.first.heapMiB, heapGrowthBound, v.peakHeapMiB,
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

// parseEvents reads eventsEnv.
func parseEvents(v string) (resourceslice.DecisionEvents, error) {
	switch v {
	case "none":
		return resourceslice.DecisionEventsNone, nil
	case "denied":
		return resourceslice.DecisionEventsDenied, nil
	case "all":
		return resourceslice.DecisionEventsAll, nil
	}
	return 0, fmt.Errorf("%q: want none, denied or all", v)
}

// startManager starts the manager a user would run: three classes with four
// workers each, the bronze class drawing from a budget, the slice cache
// trimmed, the tenant rule on (the default), decision events as events
// says. Events are off by default because client-go's event broadcaster
// keeps every event it sends for six minutes (to build series): with events
// on, a few minutes' soak measures that cache filling, not the SDK.
func startManager(t *testing.T, bronze *budget.Budget, reg *prometheus.Registry, logs *errorLog, events resourceslice.DecisionEvents) (manager.Manager, func()) {
	t.Helper()
	opts := manager.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.New(errorSink{logs}),
	}
	resourceslice.TrimCache(&opts.Cache)
	mgr, err := manager.New(cp.Config, opts)
	require.NoError(t, err)
	common := []resourceslice.Option{
		resourceslice.WithMaxConcurrentReconciles(4),
		resourceslice.WithDecisionEvents(events),
		resourceslice.WithMetricsRegisterer(reg),
	}
	require.NoError(t, resourceslice.AddToManager(mgr, classGold, grant(0), common...))
	require.NoError(t, resourceslice.AddToManager(mgr, classSilver, grant(silverMaxCPU), common...))
	require.NoError(t, resourceslice.AddToManager(mgr, classBronze, grant(0), append(common, resourceslice.WithBudget(bronze))...))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err, "manager")
			case <-time.After(time.Minute):
				t.Error("manager did not stop within a minute")
			}
		})
	}
	t.Cleanup(stop)
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx), "manager cache did not sync")
	return mgr, stop
}

// grant is the classes' policy: grant what is asked, or, with maxCPU > 0,
// deny a slice asking more CPU than that with reasonTooLarge.
func grant(maxCPU int64) handler.Func {
	return func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		if cpu := rs.Spec.Resources.Cpu(); maxCPU > 0 && cpu.Value() > maxCPU {
			rs.Status.Resources = nil
			conditions.Deny(rs, reasonTooLarge, fmt.Sprintf("asks %s CPU, the class grants at most %d", cpu, maxCPU))
			return ctrl.Result{}, nil
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, reasonGranted, "granted as requested")
		return ctrl.Result{}, nil
	}
}

// allDecided reports, from the manager's cache, whether every served slice
// is decided and, with want ≥ 0, whether there are want of them.
func allDecided(c client.Reader, want int) func() bool {
	return func() bool {
		n, undecided, _, err := countSlices(context.Background(), c)
		return err == nil && undecided == 0 && (want < 0 || n == want)
	}
}

// eventually checks cond every second until it holds, and fails the test
// if it still does not after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	require.NoError(t, err, "timed out after %s waiting for %s", timeout, what)
}

// checkFinal reads every slice from the API server and lists how the
// outcome differs from what the fleet's record says it must be:
//
//   - the server holds exactly the slices the churn kept;
//   - Liqo's fields are as Liqo last wrote them;
//   - a Drained tenant's slices are Denied/TenantDrained; a Cordoned
//     tenant's are decided (a slice decided before the cordon keeps any
//     decision, a new one is Denied/TenantCordoned);
//   - an Active tenant's slices are decided by their class's policy: gold
//     Accepted with what it asked, silver the same up to silverMaxCPU and
//     Denied/TooLarge above, bronze Accepted or Denied/BudgetExhausted;
//   - the bronze budget's Used equals what Accepted bronze slices hold, at
//     most its total, and no waiting slice of an Active tenant fits what is
//     free.
//
// tally counts the slices by tenant condition, class and decision.
func checkFinal(ctx context.Context, t *testing.T, f *fleet, bronze *budget.Budget, bronzeCPU int) (problems []string, tally map[string]int) {
	t.Helper()
	want, tenants := f.snapshot()
	byNamespace := map[string]authv1beta1.TenantCondition{}
	for i, tn := range f.tenants {
		byNamespace[tn.namespace] = tenants[i]
	}
	var list authv1beta1.ResourceSliceList
	tally = map[string]int{}
	held, waiting := resource.Quantity{}, 0
	seen := 0
	for {
		require.NoError(t, cp.Client.List(ctx, &list, client.Limit(2000), client.Continue(list.Continue)))
		for i := range list.Items {
			rs := &list.Items[i]
			key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
			r, ok := want[key]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: on the server, not kept by the churn", key))
				continue
			}
			seen++
			if c := conditions.Get(rs, conditions.Resources); c != nil {
				tally[fmt.Sprintf("%s %s %s/%s", byNamespace[rs.Namespace], r.class, c.Status, c.Reason)]++
			}
			if p := checkSlice(rs, r, byNamespace[rs.Namespace]); p != "" {
				problems = append(problems, fmt.Sprintf("%s (%s, %d CPU, tenant %s): %s", key, r.class, r.cpu, byNamespace[rs.Namespace], p))
			}
			if r.class == classBronze {
				c := conditions.Get(rs, conditions.Resources)
				switch {
				case conditions.IsAccepted(rs):
					held.Add(rs.Status.Resources[corev1.ResourceCPU])
				case c != nil && c.Reason == budget.ReasonExhausted && byNamespace[rs.Namespace] == authv1beta1.TenantConditionActive:
					waiting++
				}
			}
		}
		if list.Continue == "" {
			break
		}
	}
	if seen != len(want) {
		problems = append(problems, fmt.Sprintf("%d slices kept by the churn, %d of them on the server", len(want), seen))
	}
	used, free := bronze.Used()[corev1.ResourceCPU], bronze.Free()[corev1.ResourceCPU]
	if used.Cmp(held) != 0 {
		problems = append(problems, fmt.Sprintf("budget: Used %s CPU, Accepted bronze slices hold %s", used.String(), held.String()))
	}
	if held.Value() > int64(bronzeCPU) {
		problems = append(problems, fmt.Sprintf("budget over-committed: Accepted bronze slices hold %s CPU of %d", held.String(), bronzeCPU))
	}
	if waiting > 0 && free.Value() >= 1 {
		problems = append(problems, fmt.Sprintf("budget: %d slices of 1 CPU wait with %s CPU free", waiting, free.String()))
	}
	return problems, tally
}

// checkSlice says how one slice differs from what it must be; "" when it
// is as expected.
func checkSlice(rs *authv1beta1.ResourceSlice, r sliceRecord, tenant authv1beta1.TenantCondition) string {
	if p := checkLiqoFields(rs, r.rev); p != "" {
		return p
	}
	c := conditions.Get(rs, conditions.Resources)
	if c == nil || !conditions.IsDecided(rs) {
		return "undecided"
	}
	got := string(c.Status) + "/" + c.Reason
	var allowed []string
	switch tenant {
	case authv1beta1.TenantConditionDrained:
		allowed = []string{"Denied/" + resourceslice.ReasonTenantDrained}
	case authv1beta1.TenantConditionCordoned:
		return ""
	default:
		allowed = []string{"Accepted/" + reasonGranted}
		switch {
		case r.class == classSilver && r.cpu > silverMaxCPU:
			allowed = []string{"Denied/" + reasonTooLarge}
		case r.class == classBronze:
			allowed = append(allowed, "Denied/"+budget.ReasonExhausted)
		}
	}
	if !slices.Contains(allowed, got) {
		return fmt.Sprintf("decision %s, want %s", got, strings.Join(allowed, " or "))
	}
	if conditions.IsAccepted(rs) {
		if cpu := rs.Status.Resources.Cpu(); cpu.Value() != int64(r.cpu) {
			return fmt.Sprintf("Accepted with %s CPU, asked %d", cpu, r.cpu)
		}
	}
	return ""
}

// errorLog keeps what the manager logs at error level; info lines (one per
// decision) are dropped.
type errorLog struct {
	mu     sync.Mutex
	n      int
	firsts []string
}

func (l *errorLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.firsts) < 10 {
		l.firsts = append(l.firsts, line)
	}
}

func (l *errorLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *errorLog) first() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.firsts) == 0 {
		return ""
	}
	return "; first ones:\n" + strings.Join(l.firsts, "\n")
}

// errorSink is a logr.LogSink writing errors to an errorLog.
type errorSink struct{ l *errorLog }

var _ logr.LogSink = errorSink{}

func (errorSink) Init(logr.RuntimeInfo)    {}
func (errorSink) Enabled(int) bool         { return false }
func (errorSink) Info(int, string, ...any) {}
func (s errorSink) Error(err error, msg string, kv ...any) {
	s.l.add(fmt.Sprintf("%s: %v %v", msg, err, kv))
}
func (s errorSink) WithValues(...any) logr.LogSink { return s }
func (s errorSink) WithName(string) logr.LogSink   { return s }
