package controlplane_test

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/testwait"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

func TestStartInstallsLiqoCRDsAndCountsRequests(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	var tenants authv1beta1.TenantList
	require.NoError(t, cp.Client.List(ctx, &tenants), "listing Tenants on a fresh control plane")
	require.NoError(t, cp.CreateNamespace(ctx, slicetest.DefaultNamespace))
	require.NoError(t, cp.CreateNamespace(ctx, slicetest.DefaultNamespace), "an existing namespace is fine")
	rs := slicetest.NewSlice("s")
	require.NoError(t, cp.Client.Create(ctx, rs), "creating a ResourceSlice")
	before, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)

	orig := rs.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	for range 2 {
		require.NoError(t, cp.Client.Status().Patch(ctx, rs, client.MergeFrom(orig)))
	}

	after, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "resourceslices", "status")
	require.NoError(t, err)
	assert.Equal(t, 2, after-before, "apiserver.RequestCount: status PATCHes on resourceslices")
	n, err := apiserver.RequestCount(ctx, cp.Config, "PATCH", "tenants", "status")
	require.NoError(t, err)
	assert.Zero(t, n, "apiserver.RequestCount must filter by resource")
}

// A fresh control plane serves the SliceBudget CRD of config/crd: its
// objects are created and read back through cp.Client, with the schema's
// rules applied (a negative total is refused) and its status a
// subresource.
func TestStartInstallsTheSliceBudgetCRD(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: "slicebudgets." + v1alpha1.Group}, &crd))
	assert.Equal(t, apiextensionsv1.ClusterScoped, crd.Spec.Scope)
	assert.Equal(t, []string{"sb"}, crd.Spec.Names.ShortNames)

	sb := &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "premium"},
		Spec:       v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("10")}},
	}
	require.NoError(t, cp.Client.Create(ctx, sb), "creating a SliceBudget")
	var got v1alpha1.SliceBudget
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: "premium"}, &got))
	cpu := got.Spec.Total[corev1.ResourceCPU]
	assert.Equal(t, "10", cpu.String())

	// An update, not a merge patch: the schema requires accepted and
	// waiting in a status, and a merge patch from an empty status would
	// leave out waiting's unchanged 0.
	got.Status.Accepted = 2
	require.NoError(t, cp.Client.Status().Update(ctx, &got), "status is a subresource")
	var list v1alpha1.SliceBudgetList
	require.NoError(t, cp.Client.List(ctx, &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, int32(2), list.Items[0].Status.Accepted)

	bad := &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "negative"},
		Spec:       v1alpha1.SliceBudgetSpec{Total: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("-1")}},
	}
	err := cp.Client.Create(ctx, bad)
	require.True(t, apierrors.IsInvalid(err), "the CRD's rules refuse a negative total: got %v", err)
}

func TestRestartKeepsObjectsAndClients(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	require.NoError(t, cp.CreateNamespace(ctx, slicetest.DefaultNamespace))
	require.NoError(t, cp.Client.Create(ctx, slicetest.NewSlice("before")))
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	w, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(slicetest.DefaultNamespace))
	require.NoError(t, err)
	defer w.Stop()

	start := time.Now()
	// envtest kills a server that outlasts its stop timeout, and the stop
	// then fails: no error means the watch grace period stopped it.
	require.NoError(t, apiserver.Restart(cp), "an open watch (a running controller always holds some) must not hold the shutdown")
	t.Logf("kube-apiserver restarted in %s", time.Since(start).Round(time.Millisecond))

	var rs authv1beta1.ResourceSlice
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: slicetest.DefaultNamespace, Name: "before"}, &rs),
		"the client built before the restart reads what was written before it")
	require.NoError(t, cp.Client.Create(ctx, slicetest.NewSlice("after")), "and writes after it")
}

func TestAddUserIsAuthorizedByRBAC(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	require.NoError(t, cp.CreateNamespace(ctx, slicetest.DefaultNamespace))
	cfg, err := cp.AddUser("system:serviceaccount:liqo:reader", "system:serviceaccounts")
	require.NoError(t, err)
	cl, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)

	var list authv1beta1.ResourceSliceList
	err = cl.List(ctx, &list, client.InNamespace(slicetest.DefaultNamespace))
	require.True(t, apierrors.IsForbidden(err), "a user no role is bound to is refused: got %v", err)

	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "slice-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{authv1beta1.GroupVersion.Group},
			Resources: []string{"resourceslices"}, Verbs: []string{"list"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "slice-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "liqo", Name: "reader"}},
	}
	require.NoError(t, cp.Client.Create(ctx, role))
	require.NoError(t, cp.Client.Create(ctx, binding))
	require.Eventually(t, func() bool {
		return cl.List(ctx, &list, client.InNamespace(slicetest.DefaultNamespace)) == nil
	}, testwait.Timeout, 50*time.Millisecond, "the ServiceAccount user may list once a role is bound to it")
}
