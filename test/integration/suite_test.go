package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// accept returns a handler that grants what is asked with reason, counting
// calls in c (may be nil).
func accept(reason string, c *calls) handler.Func {
	return func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		if c != nil {
			c.inc(rs.Name)
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, reason, "granted by "+reason)
		return ctrl.Result{}, nil
	}
}

func sliceIn(ns, name, class string, opts ...slicetest.SliceOption) *authv1beta1.ResourceSlice {
	base := []slicetest.SliceOption{slicetest.WithNamespace(ns), slicetest.WithClass(class), slicetest.WithRequest(corev1.ResourceCPU, "1")}
	return slicetest.NewSlice(name, append(base, opts...)...)
}

func fastBackoff() resourceslice.Option {
	return resourceslice.WithRetryBackoff(10*time.Millisecond, 200*time.Millisecond)
}

// 1. Two served classes, an unserved class, "" and "default": each served
// class decides its own slices; the others are never written.
func TestClassesAreIsolated(t *testing.T) {
	ns := namespace(t, "isolation")
	startManager(t, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, "iso-gold", accept("GoldPolicy", nil)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "iso-silver", accept("SilverPolicy", nil))
	})
	for _, rs := range []*authv1beta1.ResourceSlice{
		sliceIn(ns, "g", "iso-gold"), sliceIn(ns, "s", "iso-silver"), sliceIn(ns, "b", "iso-bronze"),
		sliceIn(ns, "none", ""), sliceIn(ns, "def", "default"),
	} {
		create(t, rs)
	}
	before := map[string]string{}
	for _, n := range []string{"b", "none", "def"} {
		before[n] = get(t, ns, n).ResourceVersion
	}
	eventually(t, 30*time.Second, "gold and silver decided", decided(ns, "g", "s"))
	if r := conditions.Get(get(t, ns, "g"), conditions.Resources).Reason; r != "GoldPolicy" {
		t.Errorf("gold slice decided by %q, want GoldPolicy", r)
	}
	if r := conditions.Get(get(t, ns, "s"), conditions.Resources).Reason; r != "SilverPolicy" {
		t.Errorf("silver slice decided by %q, want SilverPolicy", r)
	}
	time.Sleep(time.Second)
	for n, rv := range before {
		got := get(t, ns, n)
		if got.ResourceVersion != rv || conditions.Get(got, conditions.Resources) != nil {
			t.Errorf("slice %s of an unserved class was written: rv %s→%s, conditions %+v", n, rv, got.ResourceVersion, got.Status.Conditions)
		}
	}
}

// 2. A goroutine playing Liqo rewrites Authentication and authParams on every
// slice while the controller decides them: nobody's fields are lost.
func TestConcurrentLiqoWriter(t *testing.T) {
	const n = 500
	ns := namespace(t, "concurrent")
	for i := range n {
		create(t, sliceIn(ns, fmt.Sprintf("s-%03d", i), "conc"))
	}
	// The writer stops between writes, never by cancelling a request in
	// flight: a cancelled request's outcome is unknown, so it could not be
	// recorded as Liqo's last write.
	ctx := context.Background()
	var stopWriter atomic.Bool
	var rounds atomic.Int32

	type written struct {
		msg string
		crt string
		rv  string
	}
	var mu sync.Mutex
	last := map[string]written{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 0; !stopWriter.Load(); round++ {
			for i := 0; i < n && !stopWriter.Load(); i++ {
				name := fmt.Sprintf("s-%03d", i)
				w := written{msg: fmt.Sprintf("authenticated, round %d", round), crt: fmt.Sprintf("crt-%d", round)}
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					var rs authv1beta1.ResourceSlice
					if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil {
						return err
					}
					conditions.Set(&rs, conditions.Authentication, conditions.Accepted, "ResourceSliceAuthenticationAccepted", w.msg)
					rs.Status.AuthParams.SignedCRT = []byte(w.crt)
					if err := cp.Client.Status().Update(ctx, &rs); err != nil {
						return err
					}
					w.rv = rs.ResourceVersion
					return nil
				})
				if err == nil {
					mu.Lock()
					last[name] = w
					mu.Unlock()
				} else {
					t.Errorf("Liqo writer: %v", err)
				}
			}
			rounds.Add(1)
		}
	}()

	startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "conc", accept("Granted", nil), resourceslice.WithMaxConcurrentReconciles(4), fastBackoff())
	})
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s-%03d", i)
	}
	eventually(t, 120*time.Second, "all slices decided", decided(ns, names...))
	eventually(t, 120*time.Second, "the Liqo writer to finish a full round", func() bool { return rounds.Load() >= 1 })
	stopWriter.Store(true)
	wg.Wait()
	if len(last) != n {
		t.Fatalf("the Liqo writer wrote %d slices, want all %d", len(last), n)
	}

	var list authv1beta1.ResourceSliceList
	if err := cp.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var evs eventsv1.EventList
	if err := cp.Client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("conflicts with Liqo must requeue quietly, got a Warning event on %s: %s %s", e.Regarding.Name, e.Reason, e.Note)
		}
	}
	for i := range list.Items {
		rs := &list.Items[i]
		w := last[rs.Name]
		a := conditions.Get(rs, conditions.Authentication)
		if !conditions.IsAccepted(rs) {
			t.Errorf("%s lost our decision: %+v", rs.Name, rs.Status.Conditions)
		}
		if w.msg != "" && (a == nil || a.Message != w.msg || string(rs.Status.AuthParams.SignedCRT) != w.crt) {
			t.Errorf("%s lost Liqo's last write: want %q/%q (rv %s), got %+v / %q (rv %s, managed %+v)", rs.Name, w.msg, w.crt, w.rv, a, rs.Status.AuthParams.SignedCRT, rs.ResourceVersion, rs.ManagedFields)
		}
	}
}

// 3. A status field the Go types do not know (newer Liqo's status.class)
// survives the controller's write.
func TestUnknownStatusFieldsSurvive(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "unknown-fields")
	var crd apiextensionsv1.CustomResourceDefinition
	if err := cp.Client.Get(ctx, types.NamespacedName{Name: "resourceslices.authentication.liqo.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		status := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"]
		status.Properties["class"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"] = status
	}
	if err := cp.Client.Update(ctx, &crd); err != nil {
		t.Fatal(err)
	}

	rs := sliceIn(ns, "newer", "unk")
	create(t, rs)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind("ResourceSlice"))
	// Wait until the API server serves the new schema: the field survives a
	// status write and read.
	eventually(t, 30*time.Second, "status.class served", func() bool {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), u); err != nil {
			return false
		}
		_ = unstructured.SetNestedField(u.Object, "unk", "status", "class")
		if err := cp.Client.Status().Update(ctx, u); err != nil {
			return false
		}
		_ = cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), u)
		v, _, _ := unstructured.NestedString(u.Object, "status", "class")
		return v == "unk"
	})

	startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "unk", accept("Granted", nil))
	})
	eventually(t, 30*time.Second, "decision", decided(ns, "newer"))
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), u); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "status", "class"); v != "unk" {
		t.Errorf("status.class was erased by the controller's write: got %q", v)
	}
}

// 4. One status write per decision and none while idle, from the API server's
// own request counter.
func TestOneWritePerDecisionAndNoneIdle(t *testing.T) {
	const n = 50
	ns := namespace(t, "writes")
	var names []string
	for i := range n {
		name := fmt.Sprintf("w-%02d", i)
		names = append(names, name)
		create(t, sliceIn(ns, name, "writes"))
	}
	before := statusPatches(t)
	startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "writes", accept("Granted", nil), resourceslice.WithMaxConcurrentReconciles(4))
	})
	eventually(t, 60*time.Second, "all decided", decided(ns, names...))
	time.Sleep(500 * time.Millisecond)
	afterDecisions := statusPatches(t)
	if got := afterDecisions - before; got != n {
		t.Errorf("status PATCHes for %d decisions: got %d, want exactly %d", n, got, n)
	}
	time.Sleep(5 * time.Second)
	if idle := statusPatches(t) - afterDecisions; idle != 0 {
		t.Errorf("status PATCHes while idle for 5s: got %d, want 0", idle)
	}
}

// 5. The tenant rule, with the Tenant watch re-evaluating slices.
func TestTenantRule(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "tenant")
	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)
	tenant.Namespace = ns
	if err := cp.Client.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	var c calls
	startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "ten", accept("Granted", &c))
	})
	setTenant := func(cond authv1beta1.TenantCondition) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(tenant), tenant); err != nil {
				return err
			}
			tenant.Spec.TenantCondition = cond
			return cp.Client.Update(ctx, tenant)
		}); err != nil {
			t.Fatal(err)
		}
	}
	reason := func(name string) func() string {
		return func() string {
			if c := conditions.Get(get(t, ns, name), conditions.Resources); c != nil {
				return string(c.Status) + "/" + c.Reason
			}
			return ""
		}
	}
	is := func(name, want string) func() bool { return func() bool { return reason(name)() == want } }

	create(t, sliceIn(ns, "a", "ten"))
	eventually(t, 30*time.Second, "a accepted", is("a", "Accepted/Granted"))

	setTenant(authv1beta1.TenantConditionDrained)
	eventually(t, 30*time.Second, "a denied after drain", is("a", "Denied/"+resourceslice.ReasonTenantDrained))

	setTenant(authv1beta1.TenantConditionActive)
	eventually(t, 30*time.Second, "a accepted again", is("a", "Accepted/Granted"))

	setTenant(authv1beta1.TenantConditionCordoned)
	create(t, sliceIn(ns, "b", "ten"))
	eventually(t, 30*time.Second, "new slice denied while cordoned", is("b", "Denied/"+resourceslice.ReasonTenantCordoned))
	time.Sleep(time.Second)
	if got := reason("a")(); got != "Accepted/Granted" {
		t.Errorf("a cordoned tenant keeps what it has: a is %s", got)
	}
}

// 6. A slice moved from class A to B: B decides, A never touches it again.
func TestClassMove(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "move")
	var ca, cb calls
	startManager(t, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, "move-a", accept("PolicyA", &ca)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "move-b", accept("PolicyB", &cb))
	})
	create(t, sliceIn(ns, "m", "move-a"))
	eventually(t, 30*time.Second, "decided by A", decided(ns, "m"))
	callsByA := ca.get("m")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := get(t, ns, "m")
		rs.Spec.Class = "move-b"
		return cp.Client.Update(ctx, rs)
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "decided by B", func() bool {
		c := conditions.Get(get(t, ns, "m"), conditions.Resources)
		return c != nil && c.Reason == "PolicyB"
	})
	time.Sleep(time.Second)
	if got := ca.get("m"); got != callsByA {
		t.Errorf("class A handled the slice after it moved to B: %d calls, want %d", got, callsByA)
	}
}

// 7. Authentication gate: decided only once Liqo accepts authentication.
func TestAuthenticationGate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "gate")
	var c calls
	startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "gate", accept("Granted", &c))
	})
	create(t, sliceIn(ns, "g", "gate", slicetest.Unauthenticated()))
	time.Sleep(2 * time.Second)
	if rs := get(t, ns, "g"); conditions.IsDecided(rs) || c.get("g") != 0 {
		t.Fatalf("an unauthenticated slice was decided: %+v after %d calls", rs.Status.Conditions, c.get("g"))
	}
	rs := get(t, ns, "g")
	conditions.Set(rs, conditions.Authentication, conditions.Accepted, "ResourceSliceAuthenticationAccepted", "")
	rs.Status.AuthParams = &authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: []byte("crt")}
	if err := cp.Client.Status().Update(ctx, rs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "decided after authentication", decided(ns, "g"))
}

// 8. Faulty handlers: panic, no decision, error-then-success. Others are
// decided, events say what happened.
func TestFaultyHandlers(t *testing.T) {
	ns := namespace(t, "faulty")
	var c calls
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		n := c.inc(rs.Name)
		switch rs.Name {
		case "boom":
			panic("policy bug")
		case "mute":
			return ctrl.Result{}, nil
		case "flaky":
			if n <= 2 {
				return ctrl.Result{}, errors.New("capacity service unavailable")
			}
		}
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "faulty", h, fastBackoff())
	})
	others := []string{"ok-1", "ok-2", "ok-3"}
	for _, n := range append([]string{"boom", "mute", "flaky"}, others...) {
		create(t, sliceIn(ns, n, "faulty"))
	}
	eventually(t, 30*time.Second, "healthy slices and flaky decided", decided(ns, append(others, "flaky")...))
	for _, n := range []string{"boom", "mute"} {
		if conditions.IsDecided(get(t, ns, n)) {
			t.Errorf("%s must stay undecided", n)
		}
	}
	eventually(t, 30*time.Second, "HandlerPanicked event on boom", hasEvent(t, ns, "boom", resourceslice.ReasonHandlerPanicked))
	eventually(t, 30*time.Second, "NoDecision event on mute", hasEvent(t, ns, "mute", resourceslice.ReasonNoDecision))
	eventually(t, 30*time.Second, "HandlerFailed event on flaky", hasEvent(t, ns, "flaky", resourceslice.ReasonHandlerFailed))
	muteCalls := c.get("mute")
	time.Sleep(2 * time.Second)
	if c.get("mute") != muteCalls || muteCalls != 1 {
		t.Errorf("a contract error must not be retried: mute called %d then %d times", muteCalls, c.get("mute"))
	}
}

// 9. Restart: a new manager finds every slice decided and writes nothing.
func TestRestart(t *testing.T) {
	const n = 20
	ns := namespace(t, "restart")
	var names []string
	for i := range n {
		name := fmt.Sprintf("r-%02d", i)
		names = append(names, name)
		create(t, sliceIn(ns, name, "restart"))
	}
	stop := startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "restart", accept("Granted", nil))
	})
	eventually(t, 30*time.Second, "all decided", decided(ns, names...))
	stop()

	type snap struct{ rv, ltt string }
	before := map[string]snap{}
	for _, name := range names {
		rs := get(t, ns, name)
		before[name] = snap{rs.ResourceVersion, conditions.Get(rs, conditions.Resources).LastTransitionTime.String()}
	}
	patches := statusPatches(t)

	var c calls
	startManager(t, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "restart", accept("Granted", &c))
	})
	eventually(t, 30*time.Second, "the new manager re-evaluated every slice", func() bool { return c.total.Load() >= n })
	time.Sleep(time.Second)
	for _, name := range names {
		rs := get(t, ns, name)
		got := snap{rs.ResourceVersion, conditions.Get(rs, conditions.Resources).LastTransitionTime.String()}
		if got != before[name] {
			t.Errorf("%s changed on restart: %+v → %+v", name, before[name], got)
		}
	}
	if d := statusPatches(t) - patches; d != 0 {
		t.Errorf("status PATCHes after restart: got %d, want 0", d)
	}
}

// 10. Invalid input from the API side gets a clear decision or event and no
// crash loop.
func TestInvalidInput(t *testing.T) {
	ns := namespace(t, "invalid")
	caps, _ := cappedresources.ParseCaps("cpu=4,memory=8Gi")
	policy, err := cappedresources.New(caps)
	if err != nil {
		t.Fatal(err)
	}
	var c calls
	counted := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		c.inc(rs.Name)
		return policy.Handle(ctx, rs)
	})
	var cneg calls
	negative := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		cneg.inc(rs.Name)
		rs.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-2")}
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	startManager(t, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, "inv", counted, fastBackoff()); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "inv-neg", negative, fastBackoff())
	})
	create(t, sliceIn(ns, "empty", "inv", slicetest.WithRequests(corev1.ResourceList{})))
	create(t, sliceIn(ns, "absurd", "inv", slicetest.WithRequest(corev1.ResourceCPU, "1e15"), slicetest.WithRequest(corev1.ResourceMemory, "9e18")))
	create(t, sliceIn(ns, "neg", "inv-neg"))

	eventually(t, 30*time.Second, "clear decisions", decided(ns, "empty", "absurd"))
	if rs := get(t, ns, "empty"); !conditions.IsDenied(rs) {
		t.Errorf("an empty request must be denied, got %+v", rs.Status.Conditions)
	}
	abs := get(t, ns, "absurd")
	if !conditions.IsAccepted(abs) || abs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) != 0 ||
		abs.Status.Resources.Memory().Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("absurd quantities must be capped: %+v %v", abs.Status.Conditions, abs.Status.Resources)
	}
	eventually(t, 30*time.Second, "InvalidResources event", hasEvent(t, ns, "neg", resourceslice.ReasonInvalidResources))
	time.Sleep(2 * time.Second)
	if c.get("empty") > 3 || c.get("absurd") > 3 || cneg.get("neg") != 1 {
		t.Errorf("crash loop: handler calls empty=%d absurd=%d neg=%d", c.get("empty"), c.get("absurd"), cneg.get("neg"))
	}
	if conditions.IsDecided(get(t, ns, "neg")) {
		t.Error("a negative offer must not be saved")
	}
}
