package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// sumLimit is one bound a classWatcher checks: the CPU Accepted slices of
// classes hold is at most limit.
type sumLimit struct {
	name    string
	classes []string
	limit   resource.Quantity
}

// classWatcher is an independent observer: it watches a namespace's slices
// on the API server and checks, at every event, every sumLimit.
type classWatcher struct {
	limits []sumLimit

	mu         sync.Mutex
	slices     map[string]*authv1beta1.ResourceSlice
	events     int
	violations []string
	peaks      map[string]resource.Quantity
}

func watchClasses(t *testing.T, ns string, limits ...sumLimit) *classWatcher {
	t.Helper()
	w := &classWatcher{limits: limits, slices: map[string]*authv1beta1.ResourceSlice{}, peaks: map[string]resource.Quantity{}}
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			if rs, ok := ev.Object.(*authv1beta1.ResourceSlice); ok {
				w.observe(ev.Type, rs)
			}
		}
	}()
	t.Cleanup(func() { wi.Stop(); cancel(); <-done })
	return w
}

func (w *classWatcher) observe(typ watch.EventType, rs *authv1beta1.ResourceSlice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if typ == watch.Deleted {
		delete(w.slices, rs.Name)
	} else {
		w.slices[rs.Name] = rs
	}
	for _, l := range w.limits {
		held := w.heldLocked(l.classes)
		if p := w.peaks[l.name]; held.Cmp(p) > 0 {
			w.peaks[l.name] = held
		}
		if held.Cmp(l.limit) > 0 {
			w.violations = append(w.violations, fmt.Sprintf("after %s of %s: Accepted slices of %v hold %s CPU, %s allows %s",
				typ, rs.Name, l.classes, held.String(), l.name, l.limit.String()))
		}
	}
}

func (w *classWatcher) heldLocked(classes []string) resource.Quantity {
	var held resource.Quantity
	for _, rs := range w.slices {
		for _, c := range classes {
			if string(rs.Spec.Class) == c && conditions.IsAccepted(rs) {
				held.Add(rs.Status.Resources[corev1.ResourceCPU])
			}
		}
	}
	return held
}

func (w *classWatcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.violations, "a budget was over-committed (%d events watched)", w.events)
	var peaks []string
	for _, l := range w.limits {
		p := w.peaks[l.name]
		peaks = append(peaks, fmt.Sprintf("%s %s/%s", l.name, p.String(), l.limit.String()))
	}
	t.Logf("watcher: %d events, peaks held: %s", w.events, strings.Join(peaks, ", "))
}

// Two classes, each with a budget of its own and a provider-wide budget
// they share, 8 workers each, 30 slices of 1 CPU per class created
// concurrently: at every event A ≤ 6, B ≤ 6 and A+B ≤ 10; in the end the
// provider is full (A+B = 10), each budget's Used is exactly what its
// classes' Accepted slices hold (an admission holds in both budgets or in
// none), and each denial names the budget that refused.
func TestBudgetsSharedByClassesWithOwnBudgets(t *testing.T) {
	cp.Require(t)
	const perClass = 30
	id := "shared-budgets"
	ns := testkit.Namespace(t, cp, id)
	classA, classB := id+"-a", id+"-b"
	cpu := func(n string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n)}
	}
	aOnly, err := budget.New(id+"-a-only", cpu("6"))
	require.NoError(t, err)
	bOnly, err := budget.New(id+"-b-only", cpu("6"))
	require.NoError(t, err)
	provider, err := budget.New(id+"-provider", cpu("10"))
	require.NoError(t, err)
	w := watchClasses(t, ns,
		sumLimit{name: aOnly.Name(), classes: []string{classA}, limit: resource.MustParse("6")},
		sumLimit{name: bOnly.Name(), classes: []string{classB}, limit: resource.MustParse("6")},
		sumLimit{name: provider.Name(), classes: []string{classA, classB}, limit: resource.MustParse("10")})
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, classA, accept("Granted", nil), resourceslice.WithBudget(aOnly),
			resourceslice.WithBudget(provider), resourceslice.WithMaxConcurrentReconciles(8)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, classB, accept("Granted", nil), resourceslice.WithBudget(bOnly),
			resourceslice.WithBudget(provider), resourceslice.WithMaxConcurrentReconciles(8))
	})

	// 60 slices created by 6 writers at once, A's and B's interleaved.
	var wg sync.WaitGroup
	errs := make(chan error, 2*perClass)
	var names []string
	for i := range 2 * perClass {
		names = append(names, fmt.Sprintf("s-%02d", i))
	}
	for wr := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := wr; i < 2*perClass; i += 6 {
				class := classA
				if i%2 == 1 {
					class = classB
				}
				if err := slicetest.CreateAsLiqo(context.Background(), cp.Client, cpuSlice(ns, names[i], class, 1)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	testkit.Eventually(t, "every slice decided", decided(ns, names...))

	heldA, _ := heldByAccepted(t, ns, classA)
	heldB, _ := heldByAccepted(t, ns, classB)
	both := heldA.DeepCopy()
	both.Add(heldB)
	t.Logf("A holds %s, B holds %s, together %s of the provider's 10", heldA.String(), heldB.String(), both.String())
	assert.Zero(t, both.Cmp(resource.MustParse("10")), "the provider's budget is full: A+B = %s", both.String())
	assert.LessOrEqual(t, heldA.Cmp(resource.MustParse("6")), 0)
	assert.LessOrEqual(t, heldB.Cmp(resource.MustParse("6")), 0)
	for _, c := range []struct {
		b    *budget.Budget
		want resource.Quantity
	}{{aOnly, heldA}, {bOnly, heldB}, {provider, both}} {
		used := c.b.Used()[corev1.ResourceCPU]
		assert.Zero(t, used.Cmp(c.want), "budget %s Used %s, its classes' Accepted slices hold %s: no partial hold", c.b.Name(), used.String(), c.want.String())
	}

	for _, c := range []struct {
		class string
		own   *budget.Budget
		held  resource.Quantity
	}{{classA, aOnly, heldA}, {classB, bOnly, heldB}} {
		states := sliceStates(t, ns, c.class)
		denied := states["Denied/"+budget.ReasonExhausted]
		assert.Len(t, denied, perClass-int(c.held.Value()), "class %s: every slice not Accepted waits with %s: %v", c.class, budget.ReasonExhausted, keysOf(states))
		byBudget := map[string]int{}
		for _, rs := range denied {
			msg := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources).Message
			switch {
			case strings.Contains(msg, "budget "+provider.Name()+":"):
				byBudget[provider.Name()]++
			case strings.Contains(msg, "budget "+c.own.Name()+":"):
				byBudget[c.own.Name()]++
			default:
				t.Errorf("class %s: %s's denial names neither of its budgets: %q", c.class, rs.Name, msg)
			}
		}
		t.Logf("class %s: %d Accepted, denials by budget %v", c.class, int(c.held.Value()), byBudget)
		if c.held.Cmp(resource.MustParse("6")) < 0 {
			// Its own budget never filled: only the provider can have refused.
			assert.Zero(t, byBudget[c.own.Name()], "class %s never filled %s, yet a denial names it", c.class, c.own.Name())
			assert.Positive(t, byBudget[provider.Name()], "class %s's denials name the provider's budget", c.class)
		}
	}
	w.check(t)
}

// fairnessRun is one run of the burst-versus-single-slice scenario, on a
// budget of 4 CPU with opts: X's burst of 20 fills it, Y's single slice
// arrives later, then one of X's Accepted slices is deleted. By default Y's
// slice must be admitted; with opts (WithOldestFirst), X's oldest waiter.
func fairnessRun(t *testing.T, id string, opts ...budget.Option) {
	const burst = 20
	class := id
	nsX := tenantNamespace(t, id+"-x", id+"-cluster-x")
	nsY := tenantNamespace(t, id+"-y", id+"-cluster-y")
	wx := grantwatch.Watch(t, cp.Config, cp.Scheme, nsX, "4")
	wy := grantwatch.Watch(t, cp.Config, cp.Scheme, nsY, "1")
	b, err := budget.New(id, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, opts...)
	require.NoError(t, err)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithMaxConcurrentReconciles(4))
	})

	// X's burst fills the budget; 16 of its slices wait.
	var names []string
	for i := range burst {
		names = append(names, fmt.Sprintf("x-%02d", i))
		create(t, sliceIn(nsX, names[i], class, slicetest.WithConsumer(id+"-cluster-x")))
	}
	testkit.Eventually(t, "X's burst decided", decided(nsX, names...))
	states := sliceStates(t, nsX, class)
	require.Len(t, states["Accepted/Granted"], 4, "X fills the budget: %v", keysOf(states))
	require.Len(t, states["Denied/"+budget.ReasonExhausted], burst-4, "the rest of X's burst waits: %v", keysOf(states))

	// Y's single slice arrives later than all of X's.
	waitNextSecond()
	create(t, sliceIn(nsY, "y", class, slicetest.WithConsumer(id+"-cluster-y")))
	testkit.Eventually(t, "y waits: the budget is full", decision(nsY, "y", "Denied/"+budget.ReasonExhausted))

	// X's oldest waiter, as the line orders it: creation time, then name.
	var oldest *authv1beta1.ResourceSlice
	for _, rs := range states["Denied/"+budget.ReasonExhausted] {
		if oldest == nil || rs.CreationTimestamp.Before(&oldest.CreationTimestamp) ||
			(rs.CreationTimestamp.Equal(&oldest.CreationTimestamp) && rs.Name < oldest.Name) {
			oldest = rs.DeepCopy()
		}
	}
	victim := states["Accepted/Granted"][0]
	require.NoError(t, cp.Client.Delete(context.Background(), &victim))
	t.Logf("deleted X's Accepted %s; X's oldest waiter is %s (created %s), y created %s",
		victim.Name, oldest.Name, oldest.CreationTimestamp.Format(time.RFC3339), get(t, nsY, "y").CreationTimestamp.Format(time.RFC3339))
	if len(opts) == 0 {
		testkit.Eventually(t, "y admitted: X holds 3 CPU, y's consumer nothing", decision(nsY, "y", "Accepted/Granted"))
		testkit.Consistently(t, 2*time.Second, "y Accepted, X still at 3 Accepted, X's oldest waiter still waiting", func() bool {
			return decision(nsY, "y", "Accepted/Granted")() && countAccepted(t, nsX, class) == 3 &&
				decision(nsX, oldest.Name, "Denied/"+budget.ReasonExhausted)()
		})
	} else {
		testkit.Eventually(t, "X's oldest waiter "+oldest.Name+" admitted", decision(nsX, oldest.Name, "Accepted/Granted"))
		testkit.Consistently(t, 2*time.Second, "y keeps waiting, X back at 4 Accepted", func() bool {
			return decision(nsY, "y", "Denied/"+budget.ReasonExhausted)() && countAccepted(t, nsX, class) == 4
		})
	}
	wx.Check(t)
	wy.Check(t)
}

// Fair order: once capacity frees, another consumer's single slice is
// admitted before any of the 16 older slices of one consumer's burst; with
// budget.WithOldestFirst the burst's oldest waiter is admitted instead.
func TestBudgetFairOrderBetweenConsumers(t *testing.T) {
	cp.Require(t)
	t.Run("fair", func(t *testing.T) { fairnessRun(t, "fair-default") })
	t.Run("oldest-first", func(t *testing.T) { fairnessRun(t, "fair-oldest", budget.WithOldestFirst()) })
}
