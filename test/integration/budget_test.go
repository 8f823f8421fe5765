package integration

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// budgetWatcher is an independent observer: it watches the namespace's
// slices on the API server and checks, at every event, that the CPU held by
// Accepted slices of classes never exceeds limit.
type budgetWatcher struct {
	limit   resource.Quantity
	classes map[string]bool

	mu         sync.Mutex
	slices     map[string]*authv1beta1.ResourceSlice
	events     int
	violations []string
	peak       resource.Quantity
}

func watchBudget(t *testing.T, ns string, limit string, classes ...string) *budgetWatcher {
	t.Helper()
	w := &budgetWatcher{limit: resource.MustParse(limit), classes: map[string]bool{}, slices: map[string]*authv1beta1.ResourceSlice{}}
	for _, c := range classes {
		w.classes[c] = true
	}
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			rs, ok := ev.Object.(*authv1beta1.ResourceSlice)
			if !ok {
				continue
			}
			w.observe(ev.Type, rs)
		}
	}()
	t.Cleanup(func() {
		wi.Stop()
		cancel()
		<-done
	})
	return w
}

func (w *budgetWatcher) observe(typ watch.EventType, rs *authv1beta1.ResourceSlice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if typ == watch.Deleted {
		delete(w.slices, rs.Name)
	} else {
		w.slices[rs.Name] = rs
	}
	held := w.heldLocked()
	if held.Cmp(w.peak) > 0 {
		w.peak = held
	}
	if held.Cmp(w.limit) > 0 {
		w.violations = append(w.violations, fmt.Sprintf("after %s of %s: Accepted slices hold %s CPU, budget %s", typ, rs.Name, held.String(), w.limit.String()))
	}
}

func (w *budgetWatcher) heldLocked() resource.Quantity {
	var held resource.Quantity
	for _, rs := range w.slices {
		if w.classes[string(rs.Spec.Class)] && conditions.IsAccepted(rs) {
			held.Add(rs.Status.Resources[corev1.ResourceCPU])
		}
	}
	return held
}

func (w *budgetWatcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.violations, "the budget was over-committed (%d events watched)", w.events)
	t.Logf("watcher: %d events, peak held %s of %s CPU", w.events, w.peak.String(), w.limit.String())
}

func cpuSlice(ns, name, class string, cpu int) *authv1beta1.ResourceSlice {
	return slicetest.NewSlice(name, slicetest.WithNamespace(ns), slicetest.WithClass(class),
		slicetest.WithRequest(corev1.ResourceCPU, fmt.Sprint(cpu)))
}

func mustBudget(t *testing.T, cpu string) *budget.Budget {
	t.Helper()
	b, err := budget.New("cpu-"+cpu, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)})
	require.NoError(t, err)
	return b
}

// heldByAccepted sums the CPU Accepted slices of classes hold on the server.
func heldByAccepted(t *testing.T, ns string, classes ...string) (resource.Quantity, []authv1beta1.ResourceSlice) {
	t.Helper()
	var list authv1beta1.ResourceSliceList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(ns)))
	var held resource.Quantity
	for _, rs := range list.Items {
		for _, c := range classes {
			if string(rs.Spec.Class) == c && conditions.IsAccepted(&rs) {
				held.Add(rs.Status.Resources[corev1.ResourceCPU])
			}
		}
	}
	return held, list.Items
}

// The pool regression (issue 8): 80 slices of 1 CPU against 10 CPU, decided
// from a backlog by 8 workers. The handler accounts nothing; the budget
// admits exactly 10.
func TestBudgetNeverOverCommitsFromABacklog(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "budget-backlog")
	w := watchBudget(t, ns, "10", "pool")
	for i := range 80 {
		create(t, cpuSlice(ns, fmt.Sprintf("s-%02d", i), "pool", 1))
	}
	b := mustBudget(t, "10")
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "pool", accept("Granted", nil),
			resourceslice.WithBudget(b), resourceslice.WithMaxConcurrentReconciles(8))
	})
	var names []string
	for i := range 80 {
		names = append(names, fmt.Sprintf("s-%02d", i))
	}
	testkit.Eventually(t, "every slice decided", decided(ns, names...))
	held, items := heldByAccepted(t, ns, "pool")
	accepted, exhausted := 0, 0
	for _, rs := range items {
		c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources)
		switch {
		case c.Status == authv1beta1.ResourceSliceConditionAccepted:
			accepted++
		case c.Reason == budget.ReasonExhausted:
			exhausted++
			assert.Contains(t, c.Message, "cpu: asked 1, waits until 1 is free")
		}
	}
	assert.Equal(t, 10, accepted)
	assert.Equal(t, 70, exhausted)
	assert.Zero(t, held.Cmp(resource.MustParse("10")), "held %s", held.String())
	used := b.Used()[corev1.ResourceCPU]
	assert.Zero(t, used.Cmp(held), "budget Used %s, Accepted slices hold %s", used.String(), held.String())
	w.check(t)
}

// Re-admission oldest first (issue 8, semantics 4): when capacity frees,
// the oldest waiting slice that fits is admitted, with one write; one that
// does not fit does not block a smaller, younger one.
func TestBudgetReadmitsOldestFirst(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "budget-fifo")
	w := watchBudget(t, ns, "4", "fifo")
	b := mustBudget(t, "4")
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "fifo", accept("Granted", nil), resourceslice.WithBudget(b))
	})
	// Creation timestamps have one-second resolution: space the slices out
	// so their age order is the order below.
	create(t, cpuSlice(ns, "a", "fifo", 4))
	testkit.Eventually(t, "a accepted", decision(ns, "a", "Accepted/Granted"))
	for _, s := range []struct {
		name string
		cpu  int
	}{{"b", 3}, {"c", 2}, {"d", 1}} {
		waitNextSecond()
		create(t, cpuSlice(ns, s.name, "fifo", s.cpu))
		testkit.Eventually(t, s.name+" waiting", decision(ns, s.name, "Denied/"+budget.ReasonExhausted))
	}
	rvB := get(t, ns, "b").ResourceVersion
	updatesOfB := countUpdates(t, ns, "b")

	require.NoError(t, cp.Client.Delete(ctx, get(t, ns, "a")))
	testkit.Eventually(t, "b (oldest, 3 CPU) admitted", decision(ns, "b", "Accepted/Granted"))
	testkit.Eventually(t, "d (1 CPU) admitted past c, which does not fit", decision(ns, "d", "Accepted/Granted"))
	testkit.Consistently(t, time.Second, "c keeps waiting", decision(ns, "c", "Denied/"+budget.ReasonExhausted))
	assert.NotEqual(t, rvB, get(t, ns, "b").ResourceVersion)
	assert.Equal(t, int32(1), updatesOfB.Load(), "b flipped to Accepted with one write")
	w.check(t)
}

// Three classes share one budget with 8 workers each; a Liqo writer rewrites
// every slice's Authentication condition, accepted slices are deleted at
// random, and the manager restarts mid-backlog with a new ledger. At no
// instant do Accepted slices hold more than the budget, and at the end every
// slice is Accepted or waiting with BudgetExhausted, no waiting slice fits
// what is free, and the ledger's Used equals what Accepted slices hold.
func TestBudgetSharedByClassesUnderChurn(t *testing.T) {
	cp.Require(t)
	if testing.Short() {
		t.Skip("long")
	}
	const (
		total  = "40"
		nSlice = 240
	)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "budget-churn")
	classes := []string{"churn-a", "churn-b", "churn-c"}
	w := watchBudget(t, ns, total, classes...)
	rng := rand.New(rand.NewSource(8))

	register := func(b *budget.Budget) func(manager.Manager) error {
		return func(mgr manager.Manager) error {
			for _, c := range classes {
				if err := resourceslice.AddToManager(mgr, c, accept("Granted", nil), resourceslice.WithBudget(b),
					resourceslice.WithMaxConcurrentReconciles(8), fastBackoff()); err != nil {
					return err
				}
			}
			return nil
		}
	}

	// Half the backlog before the first manager starts.
	names := make([]string, 0, nSlice)
	// created counts the slices whose creation (object, then Liqo's status)
	// is done: Liqo's writer below touches only those, or its write could
	// land between a creation's two requests and fail the second.
	var created atomic.Int32
	add := func(i int) {
		name := fmt.Sprintf("s-%03d", i)
		names = append(names, name)
		create(t, cpuSlice(ns, name, classes[i%len(classes)], 1+rng.Intn(4)))
		created.Store(int32(i + 1))
	}
	for i := range nSlice / 2 {
		add(i)
	}

	// Liqo's writer: rewrites the Authentication message of random slices.
	var stopLiqo atomic.Bool
	var liqoWrites atomic.Int32
	var liqoWG sync.WaitGroup
	liqoWG.Add(1)
	go func() {
		defer liqoWG.Done()
		r := rand.New(rand.NewSource(9))
		for round := 0; !stopLiqo.Load(); round++ {
			name := fmt.Sprintf("s-%03d", r.Intn(int(created.Load())))
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var rs authv1beta1.ResourceSlice
				if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
					return err
				}
				sliceconds.Set(&rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "LiqoAuth", fmt.Sprintf("round %d", round))
				return cp.Client.Status().Update(ctx, &rs)
			})
			if err == nil {
				liqoWrites.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { stopLiqo.Store(true); liqoWG.Wait() }()

	// Deletions: remove random Accepted slices now and then.
	deleted := map[string]bool{}
	deleteSome := func(n int) {
		var list authv1beta1.ResourceSliceList
		require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(ns)))
		rng.Shuffle(len(list.Items), func(i, j int) { list.Items[i], list.Items[j] = list.Items[j], list.Items[i] })
		for i := 0; i < len(list.Items) && n > 0; i++ {
			rs := &list.Items[i]
			if conditions.IsAccepted(rs) {
				if err := cp.Client.Delete(ctx, rs); err != nil && !apierrors.IsNotFound(err) {
					require.NoError(t, err)
				}
				deleted[rs.Name] = true
				n--
			}
		}
	}

	stop := testkit.StartManager(t, cp, register(mustBudget(t, total))).Stop
	for i := nSlice / 2; i < 3*nSlice/4; i++ {
		add(i)
	}
	testkit.Eventually(t, "some slices accepted", func() bool {
		held, _ := heldByAccepted(t, ns, classes...)
		return held.Sign() > 0
	})
	deleteSome(5)
	stop() // restart mid-backlog: a new process with a new ledger

	for i := 3 * nSlice / 4; i < nSlice; i++ {
		add(i)
	}
	b := mustBudget(t, total)
	testkit.StartManager(t, cp, register(b))
	deleteSome(5)
	var live []string
	for _, n := range names {
		if !deleted[n] {
			live = append(live, n)
		}
	}
	testkit.Eventually(t, "every live slice decided", decided(ns, live...))
	deleteSome(5)

	// Settled: every slice Accepted or waiting, and no waiting slice fits.
	testkit.Eventually(t, "the budget settles: no waiting slice fits what is free", func() bool {
		held, items := heldByAccepted(t, ns, classes...)
		free := resource.MustParse(total)
		free.Sub(held)
		for _, rs := range items {
			c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources)
			if c == nil || !rs.DeletionTimestamp.IsZero() {
				return false
			}
			if c.Status == authv1beta1.ResourceSliceConditionDenied {
				if c.Reason != budget.ReasonExhausted {
					return false
				}
				if ask := rs.Spec.Resources[corev1.ResourceCPU]; ask.Cmp(free) <= 0 {
					return false
				}
			}
		}
		used := b.Used()[corev1.ResourceCPU]
		return used.Cmp(held) == 0
	})
	stopLiqo.Store(true)
	liqoWG.Wait()
	t.Logf("Liqo writes: %d", liqoWrites.Load())
	assert.Positive(t, liqoWrites.Load())
	// Liqo's fields survived every write of ours.
	_, items := heldByAccepted(t, ns, classes...)
	for _, rs := range items {
		c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeAuthentication)
		if assert.NotNil(t, c, rs.Name) {
			assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, c.Status, rs.Name)
		}
	}
	w.check(t)
}

// decision reports whether the slice's Resources condition is "Status/Reason".
func decision(ns, name, want string) func() bool {
	return func() bool {
		var rs authv1beta1.ResourceSlice
		if err := cp.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return false
		}
		c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && string(c.Status)+"/"+c.Reason == want
	}
}

// waitNextSecond waits until the wall clock enters a new second, so the next
// object's creationTimestamp (whole seconds) is later than the last one's.
func waitNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now) + 10*time.Millisecond)
}

// countUpdates counts the updates of one slice on the API server from now
// on, until the test ends.
func countUpdates(t *testing.T, ns, name string) *atomic.Int32 {
	t.Helper()
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: get(t, ns, name).ResourceVersion}})
	require.NoError(t, err)
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Modified {
				n.Add(1)
			}
		}
	}()
	t.Cleanup(func() { wi.Stop(); cancel(); <-done })
	return &n
}
