package integration

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
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
	testkit.Every(20*time.Millisecond).Eventually(t, fmt.Sprintf("%d handler calls at once", workers), func() bool {
		return inFlight.Load() == workers
	})
	open()
	names := make([]string, 2*workers)
	for i := range names {
		names[i] = fmt.Sprintf("d-%d", i)
	}
	testkit.Every(50*time.Millisecond).Eventually(t, "every slice decided", decided(ns, names...))
	assert.Equal(t, int64(workers), peak.Load(), "at most the manager's MaxConcurrentReconciles at once")
}

// releasing accepts every slice and counts Release calls per slice.
type releasing struct {
	released calls
}

func (h *releasing) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "granted")
	return ctrl.Result{}, nil
}

func (h *releasing) Release(_ context.Context, key types.NamespacedName) error {
	h.released.inc(key.Name)
	return nil
}

// Slices whose class is only in status.class (spec.class "") are released
// when they are deleted together, every one of them, and their budget gives
// back all they held: the deletion reaches the class through the
// status.class view, which still knows the slice's class.
func TestStatusClassSlicesReleasedWhenDeleted(t *testing.T) {
	cp.Require(t)
	const n = 30
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "books-r4rel")
	class := "r4rel"
	extendCRDWithStatusClass(t)
	b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprint(n))})
	require.NoError(t, err)
	h := &releasing{}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, h, resourceslice.WithBudget(b), resourceslice.WithoutTenantRule(),
			resourceslice.WithMaxConcurrentReconciles(4))
	})
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("r-%02d", i)
		rs := sliceIn(ns, names[i], "")
		create(t, rs)
		setStatusClass(t, client.ObjectKeyFromObject(rs), class)
	}
	testkit.Eventually(t, "every slice Accepted", func() bool {
		for _, name := range names {
			if !conditions.IsAccepted(get(t, ns, name)) {
				return false
			}
		}
		return true
	})
	require.NoError(t, cp.Client.DeleteAllOf(ctx, &authv1beta1.ResourceSlice{}, client.InNamespace(ns)))
	testkit.Eventually(t, fmt.Sprintf("Release called for all %d slices", n), func() bool {
		for _, name := range names {
			if h.released.get(name) == 0 {
				return false
			}
		}
		return true
	})
	testkit.Eventually(t, "the budget holds nothing", func() bool {
		used := b.Used()
		return used.Cpu().IsZero()
	})
}

// After a restart, slices whose class is only in status.class count in
// their budget from the first decision: a budget of 4 whose 4 slices were
// Accepted before the restart admits no fifth, on every restart.
func TestStatusClassSlicesCountAfterRestart(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "books-restart")
	class := "books-restart"
	extendCRDWithStatusClass(t)
	newBudget := func() *budget.Budget {
		b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
		require.NoError(t, err)
		return b
	}
	start := func(b *budget.Budget) *testkit.Manager {
		return testkit.StartManager(t, cp, func(mgr manager.Manager) error {
			return resourceslice.AddToManager(mgr, class, accept("Granted", nil), resourceslice.WithBudget(b),
				resourceslice.WithoutTenantRule(), resourceslice.WithMaxConcurrentReconciles(4))
		})
	}
	m := start(newBudget())
	for i := range 4 {
		rs := sliceIn(ns, fmt.Sprintf("h-%d", i), "")
		create(t, rs)
		setStatusClass(t, client.ObjectKeyFromObject(rs), class)
	}
	testkit.Eventually(t, "4 slices Accepted", func() bool { return countAccepted(t, ns, "") == 4 })
	m.Stop()
	for round := range 3 {
		b := newBudget()
		m := start(b)
		extra := fmt.Sprintf("extra-%d", round)
		rs := sliceIn(ns, extra, "")
		create(t, rs)
		setStatusClass(t, client.ObjectKeyFromObject(rs), class)
		got := waitForDecision(t, ns, extra)
		c := conditions.Get(got, authv1beta1.ResourceSliceConditionTypeResources)
		assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, c.Status, "round %d: a fifth slice on a full budget: %s %s", round, c.Reason, c.Message)
		assert.Equal(t, budget.ReasonExhausted, c.Reason, "round %d", round)
		used := b.Used()
		assert.Equal(t, int64(4), used.Cpu().Value(), "round %d: the budget counts the 4 Accepted", round)
		m.Stop()
		require.NoError(t, cp.Client.Delete(ctx, got))
	}
}

// A waiting slice's condition names what blocks it now, in kind (stable
// figures only): acme holds 5 of its 8-CPU limit and asks 4 more on a budget that
// globex fills (BudgetExhausted, 1400m free); once globex's 8 CPU are
// freed, acme's limit blocks it, and its condition says so.
func TestWaitingSliceNamesWhatBlocksItNow(t *testing.T) {
	cp.Require(t)
	acme := tenantNamespace(t, "books-acme", "acme")
	globex := tenantNamespace(t, "books-globex", "globex")
	class := "books-reason"
	b, err := budget.New("books-shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("14400m")},
		budget.WithConsumerLimit(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}))
	require.NoError(t, err)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	create(t, sliceIn(acme, "acme-1", class, slicetest.WithConsumer("acme"), slicetest.WithRequest(corev1.ResourceCPU, "5")))
	create(t, sliceIn(globex, "globex-1", class, slicetest.WithConsumer("globex"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "acme-1 and globex-1 Accepted", func() bool {
		return conditions.IsAccepted(get(t, acme, "acme-1")) && conditions.IsAccepted(get(t, globex, "globex-1"))
	})
	create(t, sliceIn(acme, "acme-2", class, slicetest.WithConsumer("acme"), slicetest.WithRequest(corev1.ResourceCPU, "4")))
	c := conditions.Get(waitForDecision(t, acme, "acme-2"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, budget.ReasonExhausted, c.Reason)
	assert.Equal(t, `budget books-shared: cpu: asked 4, waits until 4 is free (cpu: consumer "acme" would go over its limit 8 with what its other slices hold or are promised: `+
		`it fits only if they release capacity or its limit is raised)`, c.Message, "freed capacity alone would not do: what else must change")

	require.NoError(t, cp.Client.Delete(context.Background(), get(t, globex, "globex-1")))
	testkit.Eventually(t, "acme-2 names its consumer limit", func() bool {
		c := conditions.Get(get(t, acme, "acme-2"), authv1beta1.ResourceSliceConditionTypeResources)
		return c.Status == authv1beta1.ResourceSliceConditionDenied && c.Reason == budget.ReasonConsumerLimit &&
			c.Message == `budget books-shared: consumer "acme" would go over its limit beside what its other slices hold or are promised: cpu: asked 4, limit 8 `+
				`(it fits only if they release capacity or its limit is raised)`
	})
	used := b.Used()
	assert.Equal(t, int64(5000), used.Cpu().MilliValue())
}

// Replacing a budget leaves nothing behind (the example manager replaces a
// class's budget on each classes-file change): after 1,000 cycles of a
// class served with a new budget of one name and stopped, goroutines and
// heap are what they were after the first, and the budget metrics show
// exactly the live budgets: one set of series while the class is served,
// none once it is stopped.
func TestReplacingBudgetsLeavesNothingBehind(t *testing.T) {
	cp.Require(t)
	const reloads = 1000
	ns := testkit.Namespace(t, cp, "books-reload")
	class := "books-reload"
	reg := prometheus.NewRegistry()
	var cs *resourceslice.ClassSet
	// A logger of its own: controller-runtime's default logger, never set
	// in this process, keeps every logger derived from it until it is set.
	opts := testkit.ManagerOptions(t, cp.Scheme)
	opts.Logger = logr.Discard()
	testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
		var err error
		cs, err = resourceslice.NewClassSet(mgr)
		return err
	})
	create(t, sliceIn(ns, "one", class))
	series := func() int {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		n := 0
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "sliceclass_budget_") {
				n += len(mf.GetMetric())
			}
		}
		return n
	}
	cycle := func(i int) {
		b, err := budget.New("reload", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprint(i%7 + 1))})
		require.NoError(t, err)
		require.NoError(t, cs.Serve(class, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule(),
			resourceslice.WithMetricsRegisterer(reg)))
		require.Equal(t, 6, series(), "total, used, waiting, in use, over grant and reclaiming of the one live budget")
		if i == 0 {
			// The first feed starts the informers every later one shares
			// (slices, Quotas, ShadowPods): wait until it counts the slice.
			testkit.Eventually(t, "the first budget counts the slice", func() bool {
				used := b.Used()
				return used.Cpu().Value() == 1
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		require.NoError(t, cs.Stop(ctx, class))
		require.Zero(t, series(), "no series once no class draws from the budget")
	}
	measure := func() (goroutines int, heap uint64) {
		var ms runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		time.Sleep(100 * time.Millisecond) // stopped goroutines finish returning
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	const warm = 10 // connections, pools and caches settle in the first ones
	for i := range warm {
		cycle(i)
	}
	g1, h1 := measure()
	for i := warm; i < reloads; i++ {
		cycle(i)
	}
	gN, hN := measure()
	t.Logf("after %d reloads: %d goroutines, %d KiB heap; after %d: %d goroutines, %d KiB heap", warm, g1, h1/1024, reloads, gN, hN/1024)
	assert.LessOrEqual(t, gN, g1+10, "goroutines grow with reloads (a leak of one per reload would add hundreds)")
	assert.Less(t, hN, h1+4<<20, "heap grows with reloads")

	// The class still decides once served again.
	b, err := budget.New("reload", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	require.NoError(t, err)
	require.NoError(t, cs.Serve(class, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule(),
		resourceslice.WithMetricsRegisterer(reg)))
	testkit.Eventually(t, "the slice decided", decided(ns, "one"))
	// Decided long ago: the new budget counts it once its feed has synced.
	testkit.Eventually(t, "the new budget counts the slice", func() bool {
		used := b.Used()
		return used.Cpu().Value() == 1
	})
}

// The budget feed settles a lost answer with a list of one slice by name
// (the controller's role has list, not get, on resourceslices): the API
// server serves that field selector for ResourceSlices, with metadata only.
func TestSliceListedByName(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "books-byname")
	create(t, sliceIn(ns, "wanted", "x"))
	create(t, sliceIn(ns, "other", "x"))
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind + "List"))
	require.NoError(t, cp.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingFields{"metadata.name": "wanted"}))
	require.Len(t, list.Items, 1)
	assert.Equal(t, get(t, ns, "wanted").ResourceVersion, list.Items[0].ResourceVersion)
}
