package charttest

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sliceclass/sliceclass/testing/envkit"
)

// installOrder is the order the tests apply kinds in, as helm does:
// what others refer to comes first.
var installOrder = []string{
	"ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
	"Service", "Deployment", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ServiceMonitor",
	"SliceBudget",
}

// install applies every rendered object with server-side apply (which
// validates strictly: an unknown or misspelt field fails), as helm's field
// manager, after creating the namespaces they name, the ServiceMonitor
// CRD, and the chart's own CRDs (crds/, which helm installs before the
// templates). It fails on a kind installOrder does not know, so that a new
// template is not applied in a surprising order.
func install(t *testing.T, objs []rendered) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancel()
	_, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{Paths: []string{"testdata/servicemonitor-crd.yaml", chartCRDs}, ErrorIfPathMissing: true,
		MaxTime: envkit.WaitTimeout}) // envtest's default: 10 s for the CRDs to be established
	require.NoError(t, err)
	for _, r := range objs {
		require.Contains(t, installOrder, r.obj.GetKind(), "%s: a kind the test does not know", r.template)
		if ns := r.obj.GetNamespace(); ns != "" {
			require.NoError(t, cp.CreateNamespace(ctx, ns))
		}
	}
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b rendered) int {
		return slices.Index(installOrder, a.obj.GetKind()) - slices.Index(installOrder, b.obj.GetKind())
	})
	for _, r := range sorted {
		u := r.obj.DeepCopy()
		err := cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("helm"), client.ForceOwnership)
		require.NoError(t, err, "%s: applying %s %s/%s", r.template, u.GetKind(), u.GetNamespace(), u.GetName())
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(r.obj.GroupVersionKind())
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(r.obj), got), "%s: reading back %s %s", r.template, u.GetKind(), u.GetName())
	}
}

// chartCRDs is the chart's crds/ directory.
const chartCRDs = chartDir + "/crds"

// TestDefaultsInstall renders the chart with its defaults (`helm install`
// with no values) and applies every object to a real API server.
func TestDefaultsInstall(t *testing.T) {
	cp.Require(t)
	objs := render(t, "liqo", "")
	for _, kind := range []string{"ValidatingAdmissionPolicy", "Service", "ServiceMonitor"} {
		only(t, objs, kind, 0)
	}
	only(t, objs, "Deployment", 1)
	only(t, objs, "ConfigMap", 1) // the classes; no dashboard by default
	install(t, objs)
}

// TestEveryOptionInstalls renders the chart with every option on and
// applies every object to a real API server.
func TestEveryOptionInstalls(t *testing.T) {
	cp.Require(t)
	objs := render(t, "sc-all", everyOptionIn("sc-all"))
	only(t, objs, "ValidatingAdmissionPolicy", 1)
	only(t, objs, "ValidatingAdmissionPolicyBinding", 1)
	only(t, objs, "Service", 1)
	only(t, objs, "ServiceMonitor", 1)
	only(t, objs, "ConfigMap", 2)
	only(t, objs, "Role", 3) // leader election here, class Leases in their own namespace, rbac.namespaceRules
	only(t, objs, "SliceBudget", 1)
	install(t, objs)
}
