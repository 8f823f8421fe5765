package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// SliceBudgets (budget.FromObject) on the API server, whose CRD the
// control plane installs (testing/controlplane). The managers' schemes
// lack sliceclass.io/v1alpha1: FromObject adds it before start.

// sbScheme is a manager's scheme: client-go's, Liqo's and the SDK's types
// (sdkscheme.Add, SliceBudget included), as a user's main
// builds it: the SDK never adds to it.
func sbScheme() *runtime.Scheme {
	s := noSBScheme()
	if err := sdkscheme.Add(s); err != nil {
		panic(err)
	}
	return s
}

// noSBScheme is client-go's and Liqo's types, not SliceBudget.
func noSBScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, authv1beta1.AddToScheme, offloadingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// sbClient returns the client of SliceBudgets; it skips the test without
// a control plane.
func sbClient(t *testing.T) client.Client {
	t.Helper()
	cp.Require(t)
	return cp.Client
}

// createSliceBudget creates a SliceBudget of spec, deleted when the test
// ends.
func createSliceBudget(t *testing.T, c client.Client, name string, spec v1alpha1.SliceBudgetSpec) {
	t.Helper()
	sb := &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	require.NoError(t, c.Create(context.Background(), sb))
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// editSliceBudget changes the named SliceBudget's spec with edit, retrying
// on conflict (the manager writes its status).
func editSliceBudget(t *testing.T, c client.Client, name string, edit func(*v1alpha1.SliceBudgetSpec)) {
	t.Helper()
	for {
		var sb v1alpha1.SliceBudget
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, &sb))
		edit(&sb.Spec)
		err := c.Update(context.Background(), &sb)
		if !apierrors.IsConflict(err) {
			require.NoError(t, err)
			return
		}
	}
}

// sliceBudget reads the named SliceBudget.
func sliceBudget(t *testing.T, c client.Client, name string) *v1alpha1.SliceBudget {
	t.Helper()
	var sb v1alpha1.SliceBudget
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, &sb))
	return &sb
}

// objectClass starts a manager serving class from the SliceBudget name
// (budget.FromObject), with what more adds (Liqo's Quotas, say), and
// returns it with the budget.
func objectClass(t *testing.T, name, class string, more ...func(manager.Manager) error) (*testkit.Manager, *budget.Budget) {
	t.Helper()
	var b *budget.Budget
	m := testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		var err error
		if b, err = budget.FromObject(mgr, name); err != nil {
			return err
		}
		for _, add := range more {
			if err := add(mgr); err != nil {
				return err
			}
		}
		return resourceslice.AddToManager(mgr, class, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	return m, b
}

func cpuList(q string) v1alpha1.Quantities {
	return v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse(q)}
}

// cpuIs reports whether rl holds q of CPU, named (a zero must be written).
func cpuIs(rl corev1.ResourceList, q string) bool {
	v, ok := rl[corev1.ResourceCPU]
	return ok && v.Cmp(resource.MustParse(q)) == 0
}

// budgetEvents lists the events regarding the SliceBudget name (events of
// a cluster-scoped object are in namespace default).
func budgetEvents(t *testing.T, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)))
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "SliceBudget" && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// The proof: a SliceBudget of 10 CPU, slices of 6 and 6: its
// status shows used 6, available 4, 1 accepted, 1 waiting; raising
// spec.total to 12 admits the waiter (both delays logged); lowering it to 8
// revokes nothing and admits nothing new. SetTotal and SetConsumerLimit
// on the budget say to edit the object.
func TestSliceBudgetStatusAndLiveTotal(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-live")
	createSliceBudget(t, c, "sb-live", v1alpha1.SliceBudgetSpec{Total: cpuList("10")})
	_, b := objectClass(t, "sb-live", "sb-live")

	create(t, sliceIn(ns, "a", "sb-live", slicetest.WithRequest(corev1.ResourceCPU, "6")))
	testkit.Eventually(t, "a Accepted", func() bool { return conditions.IsAccepted(get(t, ns, "a")) })
	created := time.Now()
	create(t, sliceIn(ns, "b", "sb-live", slicetest.WithRequest(corev1.ResourceCPU, "6")))
	testkit.Every(20*time.Millisecond).Eventually(t, "status: used 6, available 4, 1 accepted, 1 waiting", func() bool {
		st := sliceBudget(t, c, "sb-live").Status
		return cpuIs(st.Used, "6") && cpuIs(st.Available, "4") && cpuIs(st.Capacity, "10") && st.Accepted == 1 && st.Waiting == 1
	})
	t.Logf("status showed the waiter %s after it was created", time.Since(created).Round(10*time.Millisecond))
	sb := sliceBudget(t, c, "sb-live")
	assert.True(t, cpuIs(sb.Status.InUse, "0") && cpuIs(sb.Status.Reclaiming, "0"), "zeros are written: %+v", sb.Status)
	assert.Equal(t, sb.Generation, sb.Status.ObservedGeneration)
	ready := meta(sb.Status.Conditions, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	require.Len(t, sb.Status.Consumers, 1)
	assert.Equal(t, ns, sb.Status.Consumers[0].Name, "the consumer is the namespace (no cluster ID label)")
	assert.True(t, cpuIs(sb.Status.Consumers[0].Used, "6"))
	assert.Equal(t, int32(1), sb.Status.Consumers[0].Waiting)
	rs := get(t, ns, "b")
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).Status)
	assert.Equal(t, budget.ReasonExhausted, conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).Reason)

	editSliceBudget(t, c, "sb-live", func(s *v1alpha1.SliceBudgetSpec) { s.Total = cpuList("12") })
	raised := time.Now()
	testkit.Every(10*time.Millisecond).Eventually(t, "the waiter admitted after the raise", func() bool {
		return conditions.IsAccepted(get(t, ns, "b"))
	})
	t.Logf("admitted %s after spec.total was raised", time.Since(raised).Round(10*time.Millisecond))
	testkit.Eventually(t, "status: used 12 of 12, 2 accepted", func() bool {
		st := sliceBudget(t, c, "sb-live").Status
		return cpuIs(st.Used, "12") && cpuIs(st.Available, "0") && cpuIs(st.Capacity, "12") && st.Accepted == 2 && st.Waiting == 0
	})

	// Shrunk below what is held, without preemption: nothing is revoked,
	// nothing new admitted, and the operator is told once.
	editSliceBudget(t, c, "sb-live", func(s *v1alpha1.SliceBudgetSpec) { s.Total = cpuList("8") })
	testkit.Eventually(t, "status: 12 used of 8", func() bool {
		st := sliceBudget(t, c, "sb-live").Status
		return cpuIs(st.Capacity, "8") && cpuIs(st.Used, "12") && cpuIs(st.Available, "0")
	})
	testkit.Eventually(t, "one CapacityBelowUsed event", func() bool {
		evs := budgetEvents(t, "sb-live")
		return len(evs) == 1 && evs[0].Reason == "CapacityBelowUsed"
	})
	create(t, sliceIn(ns, "c", "sb-live", slicetest.WithRequest(corev1.ResourceCPU, "1")))
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, conditions.Get(waitForDecision(t, ns, "c"), authv1beta1.ResourceSliceConditionTypeResources).Status)
	testkit.Consistently(t, 2*time.Second, "a and b keep their 6", func() bool {
		a, b := get(t, ns, "a"), get(t, ns, "b")
		return conditions.IsAccepted(a) && conditions.IsAccepted(b) && cpuIs(a.Status.Resources, "6") && cpuIs(b.Status.Resources, "6")
	})

	err := b.SetTotal(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.total")
	err = b.SetConsumerLimit("globex", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.consumerLimits")
	assert.True(t, cpuIs(b.Total(), "8"), "the refused SetTotal changed nothing")
}

func meta(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// A consumer limit of 0 written into the object, with preemption, shrinks
// that consumer's slice (Reclaimed) with one Reclaimed event on the
// SliceBudget; a new manager (a restart) reads the limit again from the
// object: the slice is never given its 8 back.
func TestSliceBudgetConsumerLimitSurvivesRestart(t *testing.T) {
	c := sbClient(t)
	ns := tenantNamespace(t, "sb-limit-globex", "sb-globex")
	createSliceBudget(t, c, "sb-limit", v1alpha1.SliceBudgetSpec{Total: cpuList("10"),
		Preemption: &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}})
	m, _ := objectClass(t, "sb-limit", "sb-limit")
	create(t, sliceIn(ns, "s", "sb-limit", slicetest.WithConsumer("sb-globex"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "globex's slice Accepted with 8", func() bool { return conditions.IsAccepted(get(t, ns, "s")) })

	editSliceBudget(t, c, "sb-limit", func(s *v1alpha1.SliceBudgetSpec) {
		s.ConsumerLimits = []v1alpha1.ConsumerLimitOverride{{Consumer: "sb-globex", Limits: cpuList("0")}}
	})
	shrunk := func() bool {
		rs := get(t, ns, "s")
		cnd := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return cnd.Status == authv1beta1.ResourceSliceConditionAccepted && cnd.Reason == budget.ReasonReclaimed && cpuIs(rs.Status.Resources, "0")
	}
	testkit.Eventually(t, "globex's slice Accepted with 0, reason Reclaimed", shrunk)
	testkit.Eventually(t, "one Reclaimed event on the SliceBudget", func() bool {
		evs := budgetEvents(t, "sb-limit")
		return len(evs) == 1 && evs[0].Reason == budget.ReasonReclaimed && evs[0].Type == corev1.EventTypeWarning
	})
	assert.Contains(t, budgetEvents(t, "sb-limit")[0].Note, `consumer "sb-globex"`)
	testkit.Eventually(t, "status: globex holds 0", func() bool {
		st := sliceBudget(t, c, "sb-limit").Status
		return cpuIs(st.Used, "0") && (len(st.Consumers) == 0 || (len(st.Consumers) == 1 && cpuIs(st.Consumers[0].Used, "0")))
	})

	m.Stop()
	objectClass(t, "sb-limit", "sb-limit")
	testkit.Consistently(t, 3*time.Second, "after the restart the slice keeps 0", shrunk)
	assert.Len(t, budgetEvents(t, "sb-limit"), 1, "nothing is reclaimed again")
}

// A SliceBudget that is deleted revokes nothing (the Accepted slice stays
// Accepted with its offer) and admits nothing new: a new slice waits with
// a message naming why; created again, it admits the waiter. A budget whose
// object does not exist yet says so too.
func TestSliceBudgetDeletedRevokesNothing(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-gone")
	objectClass(t, "sb-gone", "sb-gone")
	create(t, sliceIn(ns, "early", "sb-gone", slicetest.WithRequest(corev1.ResourceCPU, "1")))
	early := conditions.Get(waitForDecision(t, ns, "early"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, early.Status)
	assert.Equal(t, budget.ReasonUnavailable, early.Reason, "a missing SliceBudget is not exhausted")
	assert.Equal(t, `budget sb-gone is unavailable: SliceBudget "sb-gone" not found: admits nothing new`, early.Message)

	createSliceBudget(t, c, "sb-gone", v1alpha1.SliceBudgetSpec{Total: cpuList("10")})
	testkit.Eventually(t, "the early slice admitted once the object exists", func() bool {
		return conditions.IsAccepted(get(t, ns, "early"))
	})
	create(t, sliceIn(ns, "a", "sb-gone", slicetest.WithRequest(corev1.ResourceCPU, "4")))
	testkit.Eventually(t, "a Accepted", func() bool { return conditions.IsAccepted(get(t, ns, "a")) })

	require.NoError(t, c.Delete(context.Background(), &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: "sb-gone"}}))
	testkit.Eventually(t, "the object is gone", func() bool {
		return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Name: "sb-gone"}, &v1alpha1.SliceBudget{}))
	})
	create(t, sliceIn(ns, "b", "sb-gone", slicetest.WithRequest(corev1.ResourceCPU, "1")))
	cnd := conditions.Get(waitForDecision(t, ns, "b"), authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, cnd.Status)
	assert.Equal(t, budget.ReasonUnavailable, cnd.Reason, "a deleted SliceBudget is not exhausted")
	assert.Equal(t, `budget sb-gone is unavailable: SliceBudget "sb-gone" not found: admits nothing new`, cnd.Message)
	testkit.Consistently(t, 2*time.Second, "a stays Accepted with 4", func() bool {
		rs := get(t, ns, "a")
		return conditions.IsAccepted(rs) && cpuIs(rs.Status.Resources, "4") && conditions.IsAccepted(get(t, ns, "early"))
	})
}

// Status writes, counted by the API server, over 60 slices created in
// about 5 s: at most one a second while they are decided, none in 5 s of
// rest.
func TestSliceBudgetStatusWriteRate(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-rate")
	createSliceBudget(t, c, "sb-rate", v1alpha1.SliceBudgetSpec{Total: cpuList("1000")})
	objectClass(t, "sb-rate", "sb-rate")
	testkit.Eventually(t, "the first status", func() bool { return sliceBudget(t, c, "sb-rate").Status.ObservedGeneration > 0 })
	writes := func() int {
		n, err := apiserver.RequestCount(context.Background(), cp.Config, "PATCH", "slicebudgets", "status")
		require.NoError(t, err)
		return n
	}
	before, start := writes(), time.Now()
	// Spread over about 5 s, so that the status changes every second.
	const n = 60
	for i := range n {
		create(t, sliceIn(ns, fmt.Sprintf("s%02d", i), "sb-rate", slicetest.WithRequest(corev1.ResourceCPU, "1")))
		time.Sleep(80 * time.Millisecond)
	}
	testkit.Eventually(t, "status: 60 accepted, 60 CPU used", func() bool {
		st := sliceBudget(t, c, "sb-rate").Status
		return st.Accepted == n && cpuIs(st.Used, "60")
	})
	elapsed := time.Since(start)
	burst := writes() - before
	t.Logf("%d status writes in %s for %d slices (%.2f/s)", burst, elapsed.Round(10*time.Millisecond), n, float64(burst)/elapsed.Seconds())
	assert.LessOrEqual(t, burst, int(elapsed/time.Second)+1, "at most one write a second")
	assert.GreaterOrEqual(t, burst, 1)

	rest := writes()
	time.Sleep(5 * time.Second)
	assert.Equal(t, rest, writes(), "no status write while nothing changes")
}

// A SliceBudget with spec.nodePool: the capacity follows the pool's nodes
// (share and reserve applied); a node made NotReady takes the capacity
// below what the slices hold, which revokes nothing and is one
// CapacityBelowUsed event; a new selector in the spec is followed, and a
// switch to spec.total too.
func TestSliceBudgetNodePool(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-pool")
	id := "sb-pool"
	addNode(t, "sb-pool-a", poolNodeLabels(id, "cpu"), "8", "0")
	addNode(t, "sb-pool-b", poolNodeLabels(id, "cpu"), "8", "0")
	addNode(t, "sb-pool-g", poolNodeLabels(id, "gpu"), "4", "2")
	selector := func(pool string) *v1alpha1.NodeSelector {
		return &v1alpha1.NodeSelector{MatchLabels: map[string]v1alpha1.LabelValue{"pool": v1alpha1.LabelValue(pool), poolTestLabel: v1alpha1.LabelValue(id)}}
	}
	createSliceBudget(t, c, "sb-pool", v1alpha1.SliceBudgetSpec{NodePool: &v1alpha1.NodePool{
		Selector: selector("cpu"), Resources: []corev1.ResourceName{corev1.ResourceCPU}, SharePercent: 75, Reserve: cpuList("2"),
	}})
	_, b := objectClass(t, "sb-pool", "sb-pool")
	testkit.Eventually(t, "capacity 16 × 75% − 2 = 10", func() bool {
		st := sliceBudget(t, c, "sb-pool").Status
		return cpuIs(st.Capacity, "10") && len(st.Capacity) == 1
	})
	rs := &authv1beta1.ResourceSlice{}
	require.NoError(t, b.PinToNodePool(rs))
	assert.Equal(t, map[string]string{"pool": "cpu", poolTestLabel: id}, rs.Status.NodeSelector, "PinToNodePool follows the spec's selector")

	create(t, sliceIn(ns, "a", "sb-pool", slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "a Accepted with 8", func() bool { return conditions.IsAccepted(get(t, ns, "a")) })
	changeNode(t, "sb-pool-b", true, setReady(corev1.ConditionFalse))
	testkit.Eventually(t, "capacity 8 × 75% − 2 = 4, used 8", func() bool {
		st := sliceBudget(t, c, "sb-pool").Status
		return cpuIs(st.Capacity, "4") && cpuIs(st.Used, "8") && cpuIs(st.Available, "0")
	})
	testkit.Eventually(t, "one CapacityBelowUsed event", func() bool {
		evs := budgetEvents(t, "sb-pool")
		return len(evs) == 1 && evs[0].Reason == "CapacityBelowUsed" && evs[0].Type == corev1.EventTypeWarning
	})
	assert.Contains(t, budgetEvents(t, "sb-pool")[0].Note, "cpu 8 held of 4")
	assert.True(t, cpuIs(get(t, ns, "a").Status.Resources, "8"), "a smaller pool revokes nothing")

	editSliceBudget(t, c, "sb-pool", func(s *v1alpha1.SliceBudgetSpec) {
		s.NodePool = &v1alpha1.NodePool{Selector: selector("gpu"), Resources: []corev1.ResourceName{corev1.ResourceCPU, resourceGPU}}
	})
	testkit.Eventually(t, "the gpu pool: cpu 4, 2 GPUs", func() bool {
		st := sliceBudget(t, c, "sb-pool").Status
		g := st.Capacity[resourceGPU]
		return cpuIs(st.Capacity, "4") && g.Value() == 2 && st.ObservedGeneration == sliceBudget(t, c, "sb-pool").Generation
	})
	require.NoError(t, b.PinToNodePool(rs))
	assert.Equal(t, "gpu", rs.Status.NodeSelector["pool"])

	editSliceBudget(t, c, "sb-pool", func(s *v1alpha1.SliceBudgetSpec) { s.NodePool, s.Total = nil, cpuList("20") })
	testkit.Eventually(t, "a fixed total of 20 CPU", func() bool {
		st := sliceBudget(t, c, "sb-pool").Status
		return cpuIs(st.Capacity, "20") && len(st.Capacity) == 1 && cpuIs(st.Available, "12")
	})
	require.Error(t, b.PinToNodePool(rs), "no pool any more")
	changeNode(t, "sb-pool-g", true, setReady(corev1.ConditionFalse))
	testkit.Consistently(t, 2*time.Second, "the old pool no longer moves the total", func() bool { return cpuIs(b.Total(), "20") })
}

// spec.evictionAfterSeconds set at run time: a consumer limit of 2 shrinks
// globex's slice of 8 whose pods use 2 (oldest), 2 and 4 (newest); with
// no evictionAfterSeconds nothing is deleted and the status shows 6 reclaiming;
// once evictionAfterSeconds is written, the two newest pods are evicted, the
// oldest runs on.
func TestSliceBudgetEvictionAfterLive(t *testing.T) {
	c := sbClient(t)
	ns := tenantNamespace(t, "sb-evict-globex", "sb-evict-globex")
	offloaded := testkit.Namespace(t, cp, "sb-evict-offloaded")
	createSliceBudget(t, c, "sb-evict", v1alpha1.SliceBudgetSpec{Total: cpuList("10")})
	objectClass(t, "sb-evict", "sb-evict", withLiqoQuotas)
	create(t, sliceIn(ns, "s", "sb-evict", slicetest.WithConsumer("sb-evict-globex"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "globex's slice Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, ns, "s")) && quotaIs(ns, "s", "8")()
	})
	pods := runShadowPodsByAge(t, offloaded, quotaUser(t, ns), "2", "2", "4")
	oldest, mid, newest := pods[0], pods[1], pods[2]

	editSliceBudget(t, c, "sb-evict", func(s *v1alpha1.SliceBudgetSpec) {
		s.ConsumerLimits = []v1alpha1.ConsumerLimitOverride{{Consumer: "sb-evict-globex", Limits: cpuList("2")}}
	})
	testkit.Eventually(t, "shrunk to 2; status: 8 in use, 6 reclaiming", func() bool {
		rs := get(t, ns, "s")
		st := sliceBudget(t, c, "sb-evict").Status
		return cpuIs(rs.Status.Resources, "2") && cpuIs(st.InUse, "8") && cpuIs(st.Reclaiming, "6")
	})
	testkit.Consistently(t, 2*time.Second, "no evictionAfterSeconds: no pod is deleted", func() bool {
		return exists(t, oldest) && exists(t, mid) && exists(t, newest)
	})
	editSliceBudget(t, c, "sb-evict", func(s *v1alpha1.SliceBudgetSpec) { s.EvictionAfterSeconds = ptr.To[int32](1) })
	testkit.Eventually(t, "the two newest pods are evicted", func() bool { return !exists(t, newest) && !exists(t, mid) })
	testkit.Consistently(t, time.Second, "the oldest fits what globex keeps: it runs on", func() bool { return exists(t, oldest) })
	testkit.Eventually(t, "status: 2 in use, nothing reclaiming", func() bool {
		st := sliceBudget(t, c, "sb-evict").Status
		return cpuIs(st.InUse, "2") && cpuIs(st.Reclaiming, "0")
	})
}

// A reclaim for a higher priority is one Reclaimed event on the
// SliceBudget, naming the waiter; the victim is shrunk and the waiter
// admitted once the victim holds less.
func TestSliceBudgetPriorityReclaimEvent(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-prio")
	createSliceBudget(t, c, "sb-prio", v1alpha1.SliceBudgetSpec{Total: cpuList("10"),
		Preemption: &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}})
	testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		b, err := budget.FromObject(mgr, "sb-prio")
		if err != nil {
			return err
		}
		if err := resourceslice.AddToManager(mgr, "sb-prio-spot", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(0)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "sb-prio-gold", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(100))
	})
	create(t, sliceIn(ns, "spot", "sb-prio-spot", slicetest.WithRequest(corev1.ResourceCPU, "4")))
	create(t, sliceIn(ns, "spot2", "sb-prio-spot", slicetest.WithRequest(corev1.ResourceCPU, "4")))
	testkit.Eventually(t, "spot holds 8", func() bool {
		return conditions.IsAccepted(get(t, ns, "spot")) && conditions.IsAccepted(get(t, ns, "spot2"))
	})
	create(t, sliceIn(ns, "gold", "sb-prio-gold", slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "gold admitted", func() bool { return conditions.IsAccepted(get(t, ns, "gold")) })
	testkit.Eventually(t, "one Reclaimed event for two victims", func() bool {
		evs := budgetEvents(t, "sb-prio")
		return len(evs) == 1 && evs[0].Reason == budget.ReasonReclaimed
	})
	assert.Equal(t, "budget sb-prio reclaimed cpu 6 from 2 slices of lower priority for "+ns+"/gold (priority 100, consumer \""+ns+"\")",
		budgetEvents(t, "sb-prio")[0].Note)
	testkit.Consistently(t, 2*time.Second, "no second event", func() bool { return len(budgetEvents(t, "sb-prio")) == 1 })
}

// On a manager that has started, FromObject does not change the scheme its
// caches read: a missing SliceBudget type is an error that says what to
// add (issue 43: nor before start; the scheme is the user's).
func TestFromObjectAfterStartNeedsTheTypes(t *testing.T) {
	sbClient(t)
	m := testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, noSBScheme()), func(manager.Manager) error { return nil })
	<-m.Elected()
	_, err := budget.FromObject(m, "sb-late")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sliceclass.io/v1alpha1 SliceBudget: call v1alpha1.AddToScheme(scheme)")
	assert.False(t, m.GetScheme().Recognizes(v1alpha1.GroupVersion.WithKind("SliceBudget")), "the scheme is left as it was")
}
