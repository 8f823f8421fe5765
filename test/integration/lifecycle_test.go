package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The lifecycle of issue 9 on a real API server: release hooks and the
// inventory sweep, WithWatch passes, WithMaxRetries, WithHandlerTimeout and
// WithDryRun beside a live manager.

// lifecyclePolicyLabel is the label a lifecyclePolicy reads: "deny" makes
// it deny.
const lifecyclePolicyLabel = "example.com/policy"

// lifecyclePolicy accepts what a slice asks unless the slice is labelled
// lifecyclePolicyLabel=deny, counts its calls per slice, and records every
// Release call. It is safe for concurrent use.
type lifecyclePolicy struct {
	calls    calls
	mu       sync.Mutex
	fail     map[string]int // Release failures left, by slice name
	attempts map[string]int
	released map[string]int
}

var (
	_ handler.Handler  = &lifecyclePolicy{}
	_ handler.Releaser = &lifecyclePolicy{}
)

func (p *lifecyclePolicy) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	p.calls.inc(rs.Name)
	if rs.Labels[lifecyclePolicyLabel] == "deny" {
		conditions.Deny(rs, "PolicyDenied", "denied by the policy")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "granted by the policy")
	return ctrl.Result{}, nil
}

func (p *lifecyclePolicy) Release(_ context.Context, key types.NamespacedName) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.attempts == nil {
		p.attempts, p.released = map[string]int{}, map[string]int{}
	}
	p.attempts[key.Name]++
	if p.fail[key.Name] > 0 {
		p.fail[key.Name]--
		return errors.New("node pool API unavailable")
	}
	p.released[key.Name]++
	return nil
}

// failReleases makes the next n Release calls for the named slice fail.
func (p *lifecyclePolicy) failReleases(name string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail == nil {
		p.fail = map[string]int{}
	}
	p.fail[name] = n
}

// releases returns the successful and the attempted Release calls for the
// named slice.
func (p *lifecyclePolicy) releases(name string) (succeeded, attempted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.released[name], p.attempts[name]
}

// releasedExactly reports whether the named slices were released (one
// successful call each) after the given attempts; a slice missing from want
// must have no Release call at all.
func (p *lifecyclePolicy) releasedExactly(t *testing.T, want map[string]int) func() bool {
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for name, attempts := range p.attempts {
			if _, ok := want[name]; !ok && attempts > 0 {
				t.Logf("unexpected Release of %s (%d calls)", name, attempts)
				return false
			}
		}
		for name, attempts := range want {
			if p.attempts[name] != attempts || p.released[name] != min(attempts, 1) {
				return false
			}
		}
		return true
	}
}

// lifecycleInventory is a lifecyclePolicy that says it holds holding,
// until it has released it.
type lifecycleInventory struct {
	*lifecyclePolicy
	holding []types.NamespacedName
	sweeps  atomic.Int32
}

var _ handler.Inventory = &lifecycleInventory{}

func (i *lifecycleInventory) Holding(context.Context) ([]types.NamespacedName, error) {
	i.sweeps.Add(1)
	var out []types.NamespacedName
	for _, k := range i.holding {
		if ok, _ := i.releases(k.Name); ok == 0 {
			out = append(out, k)
		}
	}
	return out, nil
}

// updateSlice reads the named slice from the API server, applies change and
// updates it, retrying on a conflict with the controller.
func updateSlice(t *testing.T, ns, name string, change func(*authv1beta1.ResourceSlice)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := get(t, ns, name)
		change(rs)
		return cp.Client.Update(context.Background(), rs)
	}))
}

// deleteSlice deletes the named slice.
func deleteSlice(t *testing.T, ns, name string) {
	t.Helper()
	rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	require.NoError(t, cp.Client.Delete(context.Background(), rs))
}

// seriesValue reads one series of a counter vector from reg; 0 when the
// series does not exist (yet).
func seriesValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// hasEventWhere reports whether the named slice has an event for which
// match holds.
func hasEventWhere(t *testing.T, ns, name string, match func(action, typ, reason, note string) bool) func() bool {
	return func() bool {
		for _, e := range eventsFor(t, ns, name) {
			if match(e.Action, e.Type, e.Reason, e.Note) {
				return true
			}
		}
		return false
	}
}

// Release is called once per exit of an Accepted slice: deleted, denied by
// the handler, denied by the tenant rule, moved to another class; never for
// a slice never Accepted or one that stays Accepted; a failing Release is
// retried until it succeeds.
func TestReleaseHookOnTheServer(t *testing.T) {
	cp.Require(t)
	const class = "rel"
	ns := testkit.Namespace(t, cp, "release")
	drained := slicetest.NewTenant("drained-consumer", authv1beta1.TenantConditionActive)
	drained.Namespace = ns
	require.NoError(t, cp.Client.Create(context.Background(), drained))

	p := &lifecyclePolicy{}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, p, fastBackoff())
	})
	names := []string{"gone", "denied", "drained", "moved", "never", "idle", "flaky"}
	for _, name := range names {
		var opts []slicetest.SliceOption
		switch name {
		case "drained":
			opts = append(opts, slicetest.WithConsumer("drained-consumer"))
		case "never":
			opts = append(opts, slicetest.WithLabel(lifecyclePolicyLabel, "deny"))
		}
		create(t, sliceIn(ns, name, class, opts...))
	}
	testkit.Eventually(t, "every slice decided", decided(ns, names...))
	require.True(t, conditions.IsDenied(get(t, ns, "never")), "precondition: never is Denied")
	testkit.Consistently(t, time.Second, "no Release while every slice stays as decided", p.releasedExactly(t, nil))

	p.failReleases("flaky", 2)
	deleteSlice(t, ns, "gone")
	updateSlice(t, ns, "denied", func(rs *authv1beta1.ResourceSlice) { rs.Labels[lifecyclePolicyLabel] = "deny" })
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cp.Client.Get(context.Background(), client.ObjectKeyFromObject(drained), drained); err != nil {
			return err
		}
		drained.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		return cp.Client.Update(context.Background(), drained)
	}))
	updateSlice(t, ns, "moved", func(rs *authv1beta1.ResourceSlice) { rs.Spec.Class = "rel-elsewhere" })
	deleteSlice(t, ns, "never")
	deleteSlice(t, ns, "flaky")

	want := map[string]int{"gone": 1, "denied": 1, "drained": 1, "moved": 1, "flaky": 3}
	testkit.Eventually(t, "one release per exit, the failing one retried until it succeeds", p.releasedExactly(t, want))
	testkit.Consistently(t, 2*time.Second, "no further Release call (never, idle: none)", p.releasedExactly(t, want))
	assert.True(t, decision(ns, "denied", "Denied/PolicyDenied")(), "denied is written Denied")
	assert.True(t, decision(ns, "drained", "Denied/"+"TenantDrained")(), "drained is written Denied")
	assert.True(t, conditions.IsAccepted(get(t, ns, "idle")), "idle stays Accepted")
}

// A restarted manager releases a slice its predecessor accepted once it is
// deleted.
func TestReleaseAfterManagerRestart(t *testing.T) {
	cp.Require(t)
	const class = "rel-restart"
	ns := testkit.Namespace(t, cp, "release-restart")
	create(t, sliceIn(ns, "a", class))
	create(t, sliceIn(ns, "b", class))
	stop := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, &lifecyclePolicy{})
	}).Stop
	testkit.Eventually(t, "a and b decided by the first manager", decided(ns, "a", "b"))
	stop()

	p := &lifecyclePolicy{}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, p)
	})
	testkit.Eventually(t, "the restarted manager re-evaluated a and b", func() bool {
		return p.calls.get("a") > 0 && p.calls.get("b") > 0
	})
	deleteSlice(t, ns, "a")
	testkit.Eventually(t, "a released by the restarted manager", p.releasedExactly(t, map[string]int{"a": 1}))
	testkit.Consistently(t, time.Second, "a released once, b not at all", p.releasedExactly(t, map[string]int{"a": 1}))
}

// inventoryBeforeRestart plays what happened before a restart: a manager
// of class accepted gone and kept and denied denied, then stopped, and gone
// was deleted while no controller ran.
func inventoryBeforeRestart(t *testing.T, ns, class string) {
	t.Helper()
	create(t, sliceIn(ns, "gone", class))
	create(t, sliceIn(ns, "kept", class))
	create(t, sliceIn(ns, "denied", class, slicetest.WithLabel(lifecyclePolicyLabel, "deny")))
	stop := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, &lifecyclePolicy{})
	}).Stop
	testkit.Eventually(t, "the first manager decided every slice", decided(ns, "gone", "kept", "denied"))
	stop()
	require.True(t, conditions.IsDenied(get(t, ns, "denied")), "precondition: denied is Denied")
	require.True(t, conditions.IsAccepted(get(t, ns, "kept")), "precondition: kept is Accepted")
	deleteSlice(t, ns, "gone")
}

// newInventory returns a lifecycleInventory of ns holding the named slices.
func newInventory(ns string, names ...string) *lifecycleInventory {
	inv := &lifecycleInventory{lifecyclePolicy: &lifecyclePolicy{}}
	for _, n := range names {
		inv.holding = append(inv.holding, types.NamespacedName{Namespace: ns, Name: n})
	}
	return inv
}

// The inventory, swept once the cache has synced, releases what the handler
// holds for a slice deleted while the controller was down.
func TestInventorySweepReleasesSlicesGoneWhileDown(t *testing.T) {
	cp.Require(t)
	const class = "inv-gone"
	ns := testkit.Namespace(t, cp, "inventory-gone")
	inventoryBeforeRestart(t, ns, class)

	inv := newInventory(ns, "gone", "kept")
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, inv)
	})
	want := map[string]int{"gone": 1}
	testkit.Eventually(t, "the sweep released gone", inv.releasedExactly(t, want))
	testkit.Consistently(t, 2*time.Second, "gone released once, kept never", inv.releasedExactly(t, want))
	assert.Equal(t, int32(1), inv.sweeps.Load(), "one sweep after the cache synced (no resync period)")
}

// The inventory releases what the handler holds for a Denied slice, and
// nothing for a slice still Accepted in the class.
func TestInventorySweepReleasesDeniedKeepsAccepted(t *testing.T) {
	cp.Require(t)
	const class = "inv-denied"
	ns := testkit.Namespace(t, cp, "inventory-denied")
	inventoryBeforeRestart(t, ns, class)

	inv := newInventory(ns, "denied", "kept")
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, inv)
	})
	want := map[string]int{"denied": 1}
	testkit.Eventually(t, "the sweep released denied", inv.releasedExactly(t, want))
	testkit.Consistently(t, 2*time.Second, "kept, Accepted in the class, is never released", inv.releasedExactly(t, want))
	assert.Equal(t, int32(1), inv.sweeps.Load(), "one sweep after the cache synced (no resync period)")
	assert.True(t, conditions.IsAccepted(get(t, ns, "kept")))
}

// With a resync period the inventory is swept again and again: a slice
// deleted while the controller was down is released, once.
func TestInventorySweepAtTheResyncPeriod(t *testing.T) {
	cp.Require(t)
	const class = "inv-resync"
	ns := testkit.Namespace(t, cp, "inventory-resync")
	inventoryBeforeRestart(t, ns, class)

	inv := newInventory(ns, "gone", "kept")
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, inv, resourceslice.WithResyncPeriod(time.Second))
	})
	want := map[string]int{"gone": 1}
	testkit.Eventually(t, "a sweep released gone", inv.releasedExactly(t, want))
	testkit.Eventually(t, "a sweep after the first", func() bool { return inv.sweeps.Load() >= 2 })
	testkit.Consistently(t, 3*time.Second, "gone released once although swept again, kept never", inv.releasedExactly(t, want))
}

// cappingPolicy offers what a slice asks for, capped at the CPU in the
// ConfigMap at capsKey, read through reader (the manager's cache).
func cappingPolicy(reader client.Reader, capsKey types.NamespacedName, c *calls) handler.Func {
	return func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		c.inc(rs.Name)
		var cm corev1.ConfigMap
		if err := reader.Get(ctx, capsKey, &cm); err != nil {
			return ctrl.Result{}, fmt.Errorf("reading the caps: %w", err)
		}
		limit, err := resource.ParseQuantity(cm.Data["cpu"])
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("parsing the CPU cap: %w", err)
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		if rs.Status.Resources.Cpu().Cmp(limit) > 0 {
			rs.Status.Resources[corev1.ResourceCPU] = limit
		}
		conditions.Accept(rs, "Capped", "granted up to the cap")
		return ctrl.Result{}, nil
	}
}

// steady waits until n has not changed for quiet, failing the test after
// testwait.Timeout: the controller has finished what it was doing.
func steady(t *testing.T, quiet time.Duration, what string, n func() int64) {
	t.Helper()
	last, since := n(), time.Now()
	testkit.Eventually(t, what, func() bool {
		if v := n(); v != last {
			last, since = v, time.Now()
		}
		return time.Since(since) >= quiet
	})
}

// offeredCPU reports whether every named slice is offered cpu CPU.
func offeredCPU(t *testing.T, ns, cpu string, names ...string) func() bool {
	return func() bool {
		for _, name := range names {
			rs := get(t, ns, name)
			if !conditions.IsAccepted(rs) || rs.Status.Resources.Cpu().Cmp(resource.MustParse(cpu)) != 0 {
				return false
			}
		}
		return true
	}
}

// WithWatch: a handler capping CPU from a ConfigMap re-decides every slice
// when the ConfigMap changes, writing only the slices whose offer changed;
// a burst of updates causes one pass.
func TestWatchRedecidesOnConfigMapChange(t *testing.T) {
	cp.Require(t)
	const class, capsName = "watch", "caps"
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "watch")
	caps := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: capsName}, Data: map[string]string{"cpu": "4"}}
	require.NoError(t, cp.Client.Create(ctx, caps))
	var small, big []string
	for i := range 5 {
		small = append(small, fmt.Sprintf("small-%d", i))
		create(t, sliceIn(ns, small[i], class)) // asks 1 CPU
		big = append(big, fmt.Sprintf("big-%d", i))
		create(t, sliceIn(ns, big[i], class, slicetest.WithRequest(corev1.ResourceCPU, "8")))
	}
	all := append(append([]string{}, small...), big...)

	reg := prometheus.NewRegistry()
	var c calls
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		onlyCaps := predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == ns && o.GetName() == capsName
		})
		return resourceslice.AddToManager(mgr, class, cappingPolicy(mgr.GetClient(), types.NamespacedName{Namespace: ns, Name: capsName}, &c),
			resourceslice.WithWatch(&corev1.ConfigMap{}, onlyCaps), resourceslice.WithMetricsRegisterer(reg))
	})
	passes := func() float64 {
		return seriesValue(t, reg, "sliceclass_watch_passes_total", map[string]string{"class": class})
	}
	testkit.Eventually(t, "small slices offered 1 CPU", offeredCPU(t, ns, "1", small...))
	testkit.Eventually(t, "big slices offered the cap, 4 CPU", offeredCPU(t, ns, "4", big...))
	// The ConfigMap listed at start causes a pass; it may coincide with the
	// slices' first reconciles, which the workqueue merges with it.
	testkit.Eventually(t, "the pass for the ConfigMap seen at start", func() bool { return passes() >= 1 })
	steady(t, time.Second, "the controller to finish the start-up pass", func() int64 { return c.total.Load() })
	calledBefore := map[string]int{}
	for _, name := range all {
		calledBefore[name] = c.get(name)
	}
	patchesBefore, passesBefore := statusPatches(t), passes()

	// Raise the cap: the big slices' offer changes, the small ones' does not.
	caps.Data["cpu"] = "6"
	require.NoError(t, cp.Client.Update(ctx, caps))
	start := time.Now()
	testkit.Eventually(t, "big slices offered the new cap, 6 CPU", offeredCPU(t, ns, "6", big...))
	t.Logf("re-decided within %s of the ConfigMap edit", time.Since(start).Round(time.Millisecond))
	testkit.Eventually(t, "every slice re-decided", func() bool {
		for _, name := range all {
			if c.get(name) <= calledBefore[name] {
				return false
			}
		}
		return true
	})
	testkit.Consistently(t, 2*time.Second, "exactly one status PATCH per big slice, none for the small ones", func() bool {
		if got := statusPatches(t) - patchesBefore; got != len(big) {
			t.Logf("status PATCHes after the cap changed: got %d, want %d", got, len(big))
			return false
		}
		return true
	})
	assert.Equal(t, 1.0, passes()-passesBefore, "one edit, one pass")
	assert.True(t, offeredCPU(t, ns, "1", small...)(), "small slices keep their offer")

	// A burst of 20 updates that leave the cap as it is: one pass per
	// coalescing window the burst spans, plus one if it straddles a window's
	// end (two for a burst under a second), and no write. On a loaded
	// machine the burst itself can take longer than a second: the bound
	// follows what it took, rather than failing the test.
	const coalesceWindow = time.Second // resourceslice's watchCoalesce
	patchesBefore, passesBefore = statusPatches(t), passes()
	burst := time.Now()
	for i := range 20 {
		caps.Data["nonce"] = fmt.Sprint(i)
		require.NoError(t, cp.Client.Update(ctx, caps))
	}
	burstTook := time.Since(burst)
	most := 1 + float64((burstTook+coalesceWindow-1)/coalesceWindow)
	testkit.Eventually(t, "a pass after the burst", func() bool { return passes() > passesBefore })
	testkit.Consistently(t, 3*time.Second, fmt.Sprintf("at most %v passes and no write for the burst", most), func() bool {
		return passes()-passesBefore <= most && statusPatches(t) == patchesBefore
	})
	got := passes() - passesBefore
	assert.GreaterOrEqual(t, got, 1.0)
	assert.LessOrEqual(t, got, most, "20 updates coalesced, one pass per window they span")
	t.Logf("20 ConfigMap updates within %s caused %v pass(es)", burstTook.Round(time.Millisecond), got)
}

// WithMaxRetries(3): a handler that always fails is called 3 times, then
// the controller gives up with a GaveUp Warning event; a label change, a
// new Authentication message from Liqo, and a WithWatch pass each make it
// try again.
func TestMaxRetriesOnTheServer(t *testing.T) {
	cp.Require(t)
	const class, nudgeName = "retries", "nudge"
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "retries")
	// The watched ConfigMap is created only to nudge: one that exists at
	// start causes a pass as soon as the cache lists it.
	nudge := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nudgeName}, Data: map[string]string{"n": "0"}}
	var c calls
	failing := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		c.inc(rs.Name)
		return ctrl.Result{}, errors.New("capacity service down")
	})
	create(t, sliceIn(ns, "a", class))
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		onlyNudge := predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == ns && o.GetName() == nudgeName
		})
		return resourceslice.AddToManager(mgr, class, failing, fastBackoff(), resourceslice.WithMaxRetries(3),
			resourceslice.WithWatch(&corev1.ConfigMap{}, onlyNudge))
	})
	gaveUp := hasEventWhere(t, ns, "a", func(_, typ, reason, _ string) bool {
		return typ == corev1.EventTypeWarning && reason == "GaveUp"
	})
	// givesUpAt waits until the handler was called want times and then
	// checks that it stays at want.
	givesUpAt := func(want int, after string) {
		t.Helper()
		testkit.Eventually(t, fmt.Sprintf("%d handler calls (%s)", want, after), func() bool { return c.get("a") >= want })
		testkit.Consistently(t, 2*time.Second, fmt.Sprintf("the controller stops at %d calls (%s)", want, after), func() bool {
			return c.get("a") == want
		})
	}
	givesUpAt(3, "the first three failures")
	testkit.Eventually(t, "a GaveUp Warning event", gaveUp)
	assert.False(t, conditions.IsDecided(get(t, ns, "a")))

	updateSlice(t, ns, "a", func(rs *authv1beta1.ResourceSlice) { rs.Labels["retry"] = "please" })
	givesUpAt(6, "a label change")

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := get(t, ns, "a")
		auth := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeAuthentication)
		require.NotNil(t, auth, "precondition: the slice is authenticated")
		auth.Message = "re-authenticated by Liqo"
		return cp.Client.Status().Update(ctx, rs)
	}))
	givesUpAt(9, "a new Authentication message")

	require.NoError(t, cp.Client.Create(ctx, nudge))
	givesUpAt(12, "a WithWatch pass")
}

// WithHandlerTimeout(100ms): a handler that answers after its deadline
// fails with a HandlerFailed event saying it timed out, and its late
// acceptance is never written.
func TestHandlerTimeoutOnTheServer(t *testing.T) {
	cp.Require(t)
	const class = "timeout"
	ns := testkit.Namespace(t, cp, "timeout")
	var c calls
	var late atomic.Int32
	slow := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		c.inc(rs.Name)
		<-ctx.Done()
		<-time.After(200 * time.Millisecond) // the policy's backend answers, late
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Late", "answered after the deadline")
		late.Add(1)
		return ctrl.Result{}, nil
	})
	create(t, sliceIn(ns, "a", class))
	patchesBefore := statusPatches(t)
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, slow, fastBackoff(),
			resourceslice.WithHandlerTimeout(100*time.Millisecond), resourceslice.WithMaxRetries(3))
	})
	testkit.Eventually(t, "a HandlerFailed Warning event saying the handler timed out",
		hasEventWhere(t, ns, "a", func(_, typ, reason, note string) bool {
			return typ == corev1.EventTypeWarning && reason == "HandlerFailed" && strings.Contains(note, "timed out")
		}))
	testkit.Eventually(t, "three late answers (WithMaxRetries(3))", func() bool { return late.Load() >= 3 })
	testkit.Consistently(t, 2*time.Second, "no late answer is written", func() bool {
		return !conditions.IsDecided(get(t, ns, "a")) && statusPatches(t) == patchesBefore
	})
	assert.Equal(t, 3, c.get("a"), "each overrun counted as a failure: given up after 3")
}

// poolCPU is the CPU b counts as used.
func poolCPU(b *budget.Budget) *resource.Quantity {
	used := b.Used()
	return used.Cpu()
}

// WithDryRun beside a live manager serving the same class: the dry run
// writes no status, records a Normal DryRun event per would-be transition,
// counts dry-run outcomes, charges no budget and calls no release hook; the
// live manager writes one patch per decision.
func TestDryRunBesideLive(t *testing.T) {
	cp.Require(t)
	const class = "dry"
	ns := testkit.Namespace(t, cp, "dryrun")
	var grant, deny []string
	for i := range 5 {
		grant = append(grant, fmt.Sprintf("grant-%d", i))
		create(t, sliceIn(ns, grant[i], class))
	}
	for i := range 2 {
		deny = append(deny, fmt.Sprintf("deny-%d", i))
		create(t, sliceIn(ns, deny[i], class, slicetest.WithLabel(lifecyclePolicyLabel, "deny")))
	}
	all := append(append([]string{}, grant...), deny...)
	patchesBefore := statusPatches(t)

	dryReg := prometheus.NewRegistry()
	pool, err := budget.New("dry-pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")})
	require.NoError(t, err)
	dry := &lifecyclePolicy{}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, dry, resourceslice.WithDryRun(), resourceslice.WithBudget(pool),
			resourceslice.WithMetricsRegisterer(dryReg))
	})
	dryRunEvent := func(name, reason string) func() bool {
		return hasEventWhere(t, ns, name, func(action, typ, r, _ string) bool {
			return action == "DryRun" && typ == corev1.EventTypeNormal && r == reason
		})
	}
	for _, name := range grant {
		testkit.Eventually(t, name+": a Normal DryRun event for the would-be acceptance", dryRunEvent(name, "Granted"))
	}
	for _, name := range deny {
		testkit.Eventually(t, name+": a Normal DryRun event for the would-be denial", dryRunEvent(name, "PolicyDenied"))
	}
	testkit.Consistently(t, 2*time.Second, "the dry run writes no status", func() bool {
		return statusPatches(t) == patchesBefore
	})
	for _, name := range all {
		assert.False(t, conditions.IsDecided(get(t, ns, name)), "%s stays undecided under a dry run", name)
	}
	dryOutcomes := func() map[string]float64 {
		out := map[string]float64{}
		for _, o := range []string{"dryrun-accepted", "dryrun-denied", "accepted", "denied"} {
			out[o] = seriesValue(t, dryReg, "sliceclass_decisions_total", map[string]string{"class": class, "outcome": o})
		}
		return out
	}
	wantDry := map[string]float64{"dryrun-accepted": 5, "dryrun-denied": 2, "accepted": 0, "denied": 0}
	assert.Equal(t, wantDry, dryOutcomes())
	assert.True(t, poolCPU(pool).IsZero(), "the dry run's budget is not charged: uses %s", poolCPU(pool).String())

	// The live manager, in the same class, beside the dry run.
	live := &lifecyclePolicy{}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, live, resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()))
	})
	testkit.Eventually(t, "the live manager decided every slice", decided(ns, all...))
	testkit.Eventually(t, "the API server to count the live manager's patches", func() bool {
		return statusPatches(t)-patchesBefore >= len(all)
	})
	testkit.Consistently(t, 3*time.Second, "one status PATCH per decision, all from the live manager", func() bool {
		if got := statusPatches(t) - patchesBefore; got != len(all) {
			t.Logf("status PATCHes for %d decisions: got %d", len(all), got)
			return false
		}
		return true
	})
	assert.Equal(t, wantDry, dryOutcomes(), "the live manager's writes cause no new dry-run decision")
	// A budget counts what the cluster shows: the live manager's grants (one
	// CPU for each of the 5 accepted), never a dry-run admission.
	testkit.Eventually(t, "the dry run's budget to count what the live manager granted, and nothing more", func() bool {
		return poolCPU(pool).Cmp(resource.MustParse("5")) == 0
	})

	deleteSlice(t, ns, grant[0])
	testkit.Eventually(t, "the live manager releases the deleted slice", live.releasedExactly(t, map[string]int{grant[0]: 1}))
	testkit.Consistently(t, time.Second, "the dry run never releases", dry.releasedExactly(t, nil))
}
