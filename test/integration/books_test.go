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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/testkit"
	"github.com/sliceclass/sliceclass/resourceslice"
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
	testkit.Eventually(t, time.Minute, "every slice Accepted", func() bool {
		for _, name := range names {
			if !conditions.IsAccepted(get(t, ns, name)) {
				return false
			}
		}
		return true
	})
	require.NoError(t, cp.Client.DeleteAllOf(ctx, &authv1beta1.ResourceSlice{}, client.InNamespace(ns)))
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("Release called for all %d slices", n), func() bool {
		for _, name := range names {
			if h.released.get(name) == 0 {
				return false
			}
		}
		return true
	})
	testkit.Eventually(t, 10*time.Second, "the budget holds nothing", func() bool {
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
	testkit.Eventually(t, 30*time.Second, "4 slices Accepted", func() bool { return countAccepted(t, ns, "") == 4 })
	m.Stop()
	for round := range 3 {
		b := newBudget()
		m := start(b)
		extra := fmt.Sprintf("extra-%d", round)
		rs := sliceIn(ns, extra, "")
		create(t, rs)
		setStatusClass(t, client.ObjectKeyFromObject(rs), class)
		got := waitForDecision(t, 30*time.Second, ns, extra)
		c := conditions.Get(got, conditions.Resources)
		assert.Equal(t, conditions.Denied, c.Status, "round %d: a fifth slice on a full budget: %s %s", round, c.Reason, c.Message)
		assert.Equal(t, budget.ReasonExhausted, c.Reason, "round %d", round)
		used := b.Used()
		assert.Equal(t, int64(4), used.Cpu().Value(), "round %d: the budget counts the 4 Accepted", round)
		m.Stop()
		require.NoError(t, cp.Client.Delete(ctx, got))
	}
}

// A waiting slice's condition names what blocks it now, with the figures
// of now: acme holds 5 of its 8-CPU limit and asks 4 more on a budget that
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
	testkit.Eventually(t, 30*time.Second, "acme-1 and globex-1 Accepted", func() bool {
		return conditions.IsAccepted(get(t, acme, "acme-1")) && conditions.IsAccepted(get(t, globex, "globex-1"))
	})
	create(t, sliceIn(acme, "acme-2", class, slicetest.WithConsumer("acme"), slicetest.WithRequest(corev1.ResourceCPU, "4")))
	c := conditions.Get(waitForDecision(t, 30*time.Second, acme, "acme-2"), conditions.Resources)
	assert.Equal(t, budget.ReasonExhausted, c.Reason)
	assert.Equal(t, "budget books-shared: cpu: asked 4, 1400m free", c.Message)

	require.NoError(t, cp.Client.Delete(context.Background(), get(t, globex, "globex-1")))
	testkit.Eventually(t, 10*time.Second, "acme-2 names its consumer limit", func() bool {
		c := conditions.Get(get(t, acme, "acme-2"), conditions.Resources)
		return c.Status == conditions.Denied && c.Reason == budget.ReasonConsumerLimit &&
			c.Message == `budget books-shared: consumer "acme" is at its limit: cpu: asked 4, holds 5, limit 8`
	})
	used := b.Used()
	assert.Equal(t, int64(5000), used.Cpu().MilliValue())
}
