package charttest

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// forbiddenNodes is what a refused read of the pool's nodes says: the
// verb refused and the resource. The reflector lists first, or watches
// first where the API server streams the initial list.
var forbiddenNodes = regexp.MustCompile(`forbidden: cannot (list|watch) nodes`)

// TestLiveEditToANodePoolUnderTheChartsRBAC is issue 42's item 3 under the
// chart's own RBAC: a SliceBudget with a total, named by a class of the
// values (which therefore bring no node rights), is edited live into a
// nodePool. The manager may
// not read nodes: the budget's Ready condition says the 403 (the verb and
// resource refused), and a new slice of its class gets a condition naming
// the budget and that cause, rather than an error retried in the log (how
// soon, normally seconds, is logged). `helm upgrade` with rbac.nodePools admits the slice,
// by the pool's capacity, with the same manager process.
func TestLiveEditToANodePoolUnderTheChartsRBAC(t *testing.T) {
	cp.Require(t)
	const ns, budget, pool = "sc-live", "sc-live-pool", "sc-live"
	// Made outside the chart, so that the upgrade below does not write
	// its total back.
	setup, cancelSetup := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancelSetup()
	require.NoError(t, cp.Client.Create(setup, &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: budget},
		Spec: v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("4")}}}))
	t.Cleanup(func() {
		_ = cp.Client.Delete(context.Background(), &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: budget}})
	})
	values := `
classes:
  budgets: []
  classes:
    - {name: gold, caps: {cpu: "2"}, sliceBudget: ` + budget + `}
`
	objs := render(t, ns, values)
	for _, p := range renderedPermissions(t, objs) {
		require.NotEqual(t, "nodes", p.resource, "a SliceBudget with a total brings no node rights: %+v", p)
	}
	install(t, objs)
	m := serve(t, ns, objs, managerBinary(t, repoRoot, "./examples/manager"))

	// Each wait below gives up after envkit.WaitTimeout on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.ready(ctx, t)
	first := consumerSlice(ctx, t, ns, "live-1", "gold")
	decided := decision(ctx, t, first)
	require.True(t, conditions.IsAccepted(decided), "by the total: %+v", conditions.Get(decided, authv1beta1.ResourceSliceConditionTypeResources))

	// The pool the edit names: one Ready node of 8 CPU.
	_, err := envkit.CreateNode(ctx, cp.Client, "sc-live-node", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
		envkit.WithNodeLabels(map[string]string{"pool": pool}))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cp.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sc-live-node"}})
	})

	var sb v1alpha1.SliceBudget
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: budget}, &sb))
	edited := sb.DeepCopy()
	edited.Spec.Total = nil
	edited.Spec.NodePool = &v1alpha1.NodePool{Selector: &v1alpha1.NodeSelector{MatchLabels: map[string]v1alpha1.LabelValue{"pool": pool}},
		Resources: []corev1.ResourceName{corev1.ResourceCPU}}
	require.NoError(t, cp.Client.Patch(ctx, edited, client.MergeFrom(&sb)))
	patched := time.Now()

	// The budget's Ready condition says the 403 (normally within seconds).
	var ready *metav1.Condition
	eventually(ctx, t, "the SliceBudget's Ready condition saying the node read is forbidden", func() bool {
		var got v1alpha1.SliceBudget
		if cp.Client.Get(ctx, client.ObjectKey{Name: budget}, &got) != nil {
			return false
		}
		ready = apimeta.FindStatusCondition(got.Status.Conditions, "Ready")
		return ready != nil && ready.ObservedGeneration == got.Generation && forbiddenNodes.MatchString(ready.Message)
	})
	t.Logf("Ready said the 403 %s after the edit", time.Since(patched).Round(10*time.Millisecond))
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "NodePoolUnreadable", ready.Reason)

	// A new slice is told (normally within seconds) by the budget's name
	// and the cause.
	second := slicetest.NewSlice("live-2", slicetest.WithNamespace(first.Namespace), slicetest.WithClass("gold"),
		slicetest.WithRequest(corev1.ResourceCPU, "1"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, second))
	created := time.Now()
	decided = decision(ctx, t, second)
	t.Logf("the new slice was told %s after it was created", time.Since(created).Round(10*time.Millisecond))
	cond := conditions.Get(decided, authv1beta1.ResourceSliceConditionTypeResources)
	require.NotNil(t, cond)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, cond.Status, "%s: %s", cond.Reason, cond.Message)
	assert.Contains(t, cond.Message, `SliceBudget "`+budget+`"`, "names the budget")
	assert.Regexp(t, forbiddenNodes, cond.Message, "names the cause")

	// helm upgrade with the node rule: the same process admits the slice.
	upgraded := render(t, ns, values+"rbac: {nodePools: true}\n")
	install(t, upgraded)
	granted := time.Now()
	key := client.ObjectKeyFromObject(second)
	eventually(ctx, t, "the waiting slice admitted once the manager may read nodes", func() bool {
		var rs authv1beta1.ResourceSlice
		return cp.Client.Get(ctx, key, &rs) == nil && conditions.IsAccepted(&rs)
	})
	t.Logf("the slice was admitted %s after the node rule was granted", time.Since(granted).Round(10*time.Millisecond))
	eventually(ctx, t, "the SliceBudget Ready by its node pool", func() bool {
		var got v1alpha1.SliceBudget
		if cp.Client.Get(ctx, types.NamespacedName{Name: budget}, &got) != nil {
			return false
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, "Ready")
		q := got.Status.Capacity[corev1.ResourceCPU]
		return c != nil && c.Status == metav1.ConditionTrue && q.Cmp(resource.MustParse("8")) == 0
	})
	select {
	case err := <-m.done:
		m.done <- err
		t.Fatalf("the manager exited: %v", err)
	default:
	}
}

// A manager its role does not let list SliceBudgets (the chart's role with
// its slicebudgets rules taken out) stalls nothing either: a slice of the
// class drawing from one is told (normally within seconds) the budget and
// the verb and resource refused, the manager stays up, and once the chart's role is
// installed whole the slice is admitted by the same process.
func TestSliceBudgetsNotListableUnderTheChartsRBAC(t *testing.T) {
	cp.Require(t)
	const ns, budget = "sc-nolist", "sc-nolist-budget"
	setup, cancelSetup := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancelSetup()
	require.NoError(t, cp.Client.Create(setup, &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: budget},
		Spec: v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("4")}}}))
	t.Cleanup(func() {
		_ = cp.Client.Delete(context.Background(), &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: budget}})
	})
	objs := render(t, ns, "classes: {budgets: [], classes: [{name: gold, caps: {cpu: \"2\"}, sliceBudget: "+budget+"}]}")
	install(t, withoutSliceBudgetRules(t, objs))
	m := serve(t, ns, objs, managerBinary(t, repoRoot, "./examples/manager"))

	// Not m.ready: /readyz (flags.AddProbes) waits for every informer of
	// the manager's cache, the SliceBudgets' included, so it answers only
	// once they are listed. The controllers serve meanwhile.
	// Each wait below gives up after envkit.WaitTimeout on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := consumerSlice(ctx, t, ns, "nolist", "gold")
	created := time.Now()
	decided := decision(ctx, t, rs)
	t.Logf("the slice was told %s after it was created (the manager starting meanwhile)", time.Since(created).Round(10*time.Millisecond))
	cond := conditions.Get(decided, authv1beta1.ResourceSliceConditionTypeResources)
	require.NotNil(t, cond)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, cond.Status, "%s: %s", cond.Reason, cond.Message)
	assert.Contains(t, cond.Message, `SliceBudget "`+budget+`"`, "names the budget")
	assert.Regexp(t, `forbidden: cannot (list|watch) slicebudgets\.sliceclass\.io`, cond.Message, "names the verb and resource refused")

	install(t, objs)
	key := client.ObjectKeyFromObject(rs)
	eventually(ctx, t, "the slice admitted once the manager may list SliceBudgets", func() bool {
		var got authv1beta1.ResourceSlice
		return cp.Client.Get(ctx, key, &got) == nil && conditions.IsAccepted(&got)
	})
	select {
	case err := <-m.done:
		m.done <- err
		t.Fatalf("the manager exited: %v", err)
	default:
	}
}

// withoutSliceBudgetRules returns objs with the ClusterRole's rules on the
// sliceclass.io group taken out.
func withoutSliceBudgetRules(t *testing.T, objs []rendered) []rendered {
	t.Helper()
	out := make([]rendered, 0, len(objs))
	taken := 0
	for _, r := range objs {
		if r.obj.GetKind() == "ClusterRole" {
			role := typed[rbacv1.ClusterRole](t, r.obj)
			kept := role.Rules[:0]
			for _, rule := range role.Rules {
				if slices.Contains(rule.APIGroups, v1alpha1.GroupVersion.Group) {
					taken++
					continue
				}
				kept = append(kept, rule)
			}
			role.Rules = kept
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(role)
			require.NoError(t, err)
			r = rendered{template: r.template, obj: &unstructured.Unstructured{Object: u}}
		}
		out = append(out, r)
	}
	require.Positive(t, taken, "the chart's role has sliceclass.io rules to take out")
	return out
}
