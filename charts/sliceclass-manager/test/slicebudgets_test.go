package charttest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/config/crd"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// sliceBudgetCRD is the CRD `make crds` generates, which the chart ships a
// copy of in crds/.
var sliceBudgetCRD = filepath.Join(repoRoot, "config", "crd", crd.SliceBudgetsFile)

// TestChartShipsTheSliceBudgetCRD checks that the chart's crds/ holds the
// SliceBudget CRD, byte for byte the one generated from api/v1alpha1 (make
// crds copies it there; a hand edit of either copy fails here).
func TestChartShipsTheSliceBudgetCRD(t *testing.T) {
	want, err := os.ReadFile(sliceBudgetCRD)
	require.NoError(t, err)
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	crds := ch.CRDObjects()
	require.Len(t, crds, 1, "the chart's crds/")
	assert.Equal(t, "crds/"+crd.SliceBudgetsFile, crds[0].File.Name)
	if diff := cmp.Diff(string(want), string(crds[0].File.Data)); diff != "" {
		t.Errorf("the chart's crds/%s differs from %s: run make crds (-generated +chart):\n%s", crd.SliceBudgetsFile, sliceBudgetCRD, diff)
	}
}

// TestSliceBudgetsRender checks that each sliceBudgets entry renders one
// SliceBudget with its spec as given, labelled as the release's objects,
// and that none render by default.
func TestSliceBudgetsRender(t *testing.T) {
	only(t, render(t, "liqo", ""), "SliceBudget", 0)

	objs := render(t, "liqo", `
sliceBudgets:
  - name: premium
    spec:
      total: {cpu: "64", memory: 256Gi}
      preemption: {withinBudget: LowerPriority}
      consumerLimit: {cpu: "16"}
      consumerLimits: [{consumer: globex, limits: {cpu: "0"}}]
  - name: gpu
    annotations: {helm.sh/resource-policy: keep}
    spec:
      nodePool: {selector: {matchLabels: {pool: gpu}}, resources: [nvidia.com/gpu], sharePercent: 90}
      evictionAfterSeconds: 600
`)
	sbs := only(t, objs, "SliceBudget", 2)
	premium, gpu := typed[v1alpha1.SliceBudget](t, sbs[0]), typed[v1alpha1.SliceBudget](t, sbs[1])
	if premium.Name != "premium" {
		premium, gpu = gpu, premium
	}
	assert.Equal(t, v1alpha1.GroupVersion.String(), sbs[0].GetAPIVersion())
	assert.Empty(t, premium.Namespace, "cluster-scoped")
	assert.Equal(t, releaseName, premium.Labels["app.kubernetes.io/instance"])
	require.NotNil(t, premium.Spec.Preemption)
	assert.Equal(t, v1alpha1.PreemptionLowerPriority, premium.Spec.Preemption.WithinBudget)
	assert.True(t, resource.MustParse("64").Equal(premium.Spec.Total["cpu"]))
	assert.True(t, resource.MustParse("256Gi").Equal(premium.Spec.Total["memory"]))
	assert.True(t, resource.MustParse("16").Equal(premium.Spec.ConsumerLimit["cpu"]))
	require.Len(t, premium.Spec.ConsumerLimits, 1)
	assert.Equal(t, "globex", premium.Spec.ConsumerLimits[0].Consumer)
	assert.True(t, resource.MustParse("0").Equal(premium.Spec.ConsumerLimits[0].Limits["cpu"]))
	assert.Equal(t, "gpu", gpu.Name)
	assert.Equal(t, map[string]string{"helm.sh/resource-policy": "keep"}, gpu.Annotations)
	require.NotNil(t, gpu.Spec.NodePool)
	assert.Equal(t, map[string]v1alpha1.LabelValue{"pool": "gpu"}, gpu.Spec.NodePool.Selector.MatchLabels)
	assert.Equal(t, int32(90), gpu.Spec.NodePool.SharePercent)
	assert.Equal(t, ptr.To[int32](600), gpu.Spec.EvictionAfterSeconds)
}

// TestSliceBudgetsRenderRefuses checks the sliceBudgets entries the chart
// refuses, each with a message saying what is wrong.
func TestSliceBudgetsRenderRefuses(t *testing.T) {
	for _, tc := range []struct{ reason, values, want string }{
		{"a SliceBudget needs a name", "sliceBudgets: [{spec: {total: {cpu: 1}}}]", "sliceBudgets entry 1: no name"},
		{"and a spec", "sliceBudgets: [{name: premium}]", `sliceBudgets: "premium" has no spec`},
		{"the spec's fields go in spec: a total beside it would be dropped",
			"sliceBudgets: [{name: premium, total: {cpu: 1}}]", `sliceBudgets entry 1: unknown key "total"`},
		{"two objects of one name would be one object",
			"sliceBudgets: [{name: a, spec: {total: {cpu: 1}}}, {name: a, spec: {total: {cpu: 2}}}]", `sliceBudgets: "a" given twice`},
		{"an entry is an object", "sliceBudgets: [premium]", "sliceBudgets entry 1: not an object"},
	} {
		_, err := renderValues(t, "liqo", tc.values)
		require.Error(t, err, tc.reason)
		assert.Contains(t, err.Error(), tc.want, tc.reason)
	}
}

// TestSliceBudgetsInstall applies the chart with SliceBudgets, and a class
// drawing from one, to a real API server that serves the chart's CRD: the
// objects are created as rendered; a spec the CRD refuses fails the
// install, as helm's would.
func TestSliceBudgetsInstall(t *testing.T) {
	cp.Require(t)
	const ns = "sc-sb"
	install(t, render(t, ns, `
sliceBudgets:
  - name: sc-sb-premium
    spec: {total: {cpu: "64"}, preemption: {withinBudget: LowerPriority}, consumerLimit: {cpu: "16"}}
  - name: sc-sb-pool
    spec: {nodePool: {selector: {matchExpressions: [{key: pool, operator: In, values: [gpu]}]}, localPods: true}, evictionAfterSeconds: 90}
classes:
  budgets: []
  classes:
    - {name: gold, caps: {cpu: "8"}, sliceBudget: sc-sb-premium, priority: 100}
    - {name: spot, caps: {cpu: "8"}, sliceBudget: sc-sb-premium}
`))
	ctx, cancel := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancel()
	c, err := client.New(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	var sb v1alpha1.SliceBudget
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "sc-sb-premium"}, &sb))
	assert.Equal(t, &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}, sb.Spec.Preemption)
	sb = v1alpha1.SliceBudget{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "sc-sb-pool"}, &sb))
	require.NotNil(t, sb.Spec.NodePool)
	assert.Equal(t, int32(100), sb.Spec.NodePool.SharePercent, "the CRD's default")
	assert.Equal(t, &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionNever}, sb.Spec.Preemption, "the CRD's default")
	assert.Equal(t, ptr.To[int32](90), sb.Spec.EvictionAfterSeconds)

	bad := render(t, ns, "sliceBudgets: [{name: sc-sb-bad, spec: {total: {cpu: \"-1\"}}}]")
	u := only(t, bad, "SliceBudget", 1)[0]
	err = cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("helm"), client.ForceOwnership)
	require.True(t, apierrors.IsInvalid(err), "a negative total is refused at install: got %v", err)
}

// sliceBudgetRBAC is what examples/manager/deploy documents for a manager
// whose classes name SliceBudgets, beside rbac.yaml.
var sliceBudgetRBAC = filepath.Join(repoRoot, "examples/manager/deploy/rbac-slicebudgets.yaml")

// TestSliceBudgetRBACIsTheDocumentedOne checks that what a class naming a
// SliceBudget adds to the chart's role, beyond the budget rule of
// rbac.yaml, is exactly the ClusterRole of rbac-slicebudgets.yaml.
func TestSliceBudgetRBACIsTheDocumentedOne(t *testing.T) {
	raw, err := os.ReadFile(sliceBudgetRBAC)
	require.NoError(t, err)
	var want []permission
	for _, doc := range splitDocuments(string(raw)) {
		var head struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		if head.Kind != "ClusterRole" {
			continue
		}
		var r rbacv1.ClusterRole
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &r))
		want = append(want, expand("", r.Rules)...)
	}
	require.NotEmpty(t, want, "%s has a ClusterRole", sliceBudgetRBAC)

	withBudget := renderedPermissions(t, render(t, "liqo", "classes: [{name: gold, caps: {cpu: 2}, budget: {cpu: 4}}]"))
	withObject := renderedPermissions(t, render(t, "liqo", "classes: [{name: gold, caps: {cpu: 2}, sliceBudget: premium}]"))
	added := slices.DeleteFunc(slices.Clone(withObject), func(p permission) bool { return slices.Contains(withBudget, p) })
	if diff := cmp.Diff(sorted(want), added, cmp.AllowUnexported(permission{})); diff != "" {
		t.Errorf("a class naming a SliceBudget adds to a budget's RBAC other than %s (-documented +chart):\n%s", sliceBudgetRBAC, diff)
	}
	removed := slices.DeleteFunc(slices.Clone(withBudget), func(p permission) bool { return slices.Contains(withObject, p) })
	assert.Empty(t, removed, "an object budget needs what a budget needs")
}

// TestNotesShowTheSliceBudgets checks that NOTES.txt points at kubectl get
// sb when the release creates SliceBudgets, and only then.
func TestNotesShowTheSliceBudgets(t *testing.T) {
	notes := renderFiles(t, "liqo", "")["sliceclass-manager/templates/NOTES.txt"]
	assert.NotContains(t, notes, "kubectl get sb")
	notes = renderFiles(t, "liqo", "sliceBudgets: [{name: premium, spec: {total: {cpu: \"8\"}}}]")["sliceclass-manager/templates/NOTES.txt"]
	assert.Contains(t, notes, "The SliceBudgets this release created (1)")
	assert.Contains(t, notes, "kubectl get sb -o wide")
}
