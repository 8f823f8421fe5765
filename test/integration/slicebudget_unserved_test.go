package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/config/crd"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Issue 42's item 8: with the SliceBudget CRD not installed, a manager
// whose classes are one drawing from a SliceBudget and one drawing from
// no budget keeps running: the budget-free class serves, the other's
// slices are told, within seconds, that the CRD is missing, and once the
// CRD and the object are created they are admitted, with no restart.
func TestMissingSliceBudgetCRDStopsOnlyItsClasses(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-nocrd")
	removeSliceBudgetCRD(t)

	m := testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		b, err := budget.FromObject(mgr, "sb-nocrd")
		if err != nil {
			return err
		}
		if err := resourceslice.AddToManager(mgr, "sb-nocrd-free", accept("Granted", nil), resourceslice.WithoutTenantRule()); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "sb-nocrd-gold", accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	create(t, sliceIn(ns, "free", "sb-nocrd-free"))
	create(t, sliceIn(ns, "gold", "sb-nocrd-gold"))
	created := time.Now()

	free := waitForDecision(t, ns, "free")
	assert.True(t, conditions.IsAccepted(free), "the class with no SliceBudget serves: %+v", conditions.Get(free, authv1beta1.ResourceSliceConditionTypeResources))
	gold := waitForDecision(t, ns, "gold")
	t.Logf("the SliceBudget class's slice was told %s after it was created", time.Since(created).Round(10*time.Millisecond))
	cond := conditions.Get(gold, authv1beta1.ResourceSliceConditionTypeResources)
	require.NotNil(t, cond)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, cond.Status, "%s: %s", cond.Reason, cond.Message)
	assert.Contains(t, cond.Message, `SliceBudget "sb-nocrd"`, "names the budget")
	assert.Contains(t, cond.Message, "the SliceBudget CRD (slicebudgets.sliceclass.io) is not installed", "names the missing CRD")
	require.True(t, m.Running(), "the manager runs on: %v", m.Err())

	// Installed, and the object created: the waiting slice is admitted by
	// the same manager.
	installSliceBudgetCRD(t)
	createSliceBudget(t, c, "sb-nocrd", v1alpha1.SliceBudgetSpec{Total: cpuList("4")})
	testkit.Eventually(t, "the gold slice admitted once the CRD and its SliceBudget exist", func() bool {
		return conditions.IsAccepted(get(t, ns, "gold"))
	})
	assert.True(t, cpuIs(get(t, ns, "gold").Status.Resources, "1"))
	require.True(t, m.Running(), "the manager runs on: %v", m.Err())
}

// removeSliceBudgetCRD deletes the SliceBudget CRD (and with it every
// SliceBudget) until the API server's discovery no longer shows it; it is
// installed again when the test ends.
func removeSliceBudgetCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	sb, err := crd.SliceBudgets()
	require.NoError(t, err)
	require.NoError(t, client.IgnoreNotFound(cp.Client.Delete(ctx, sb)))
	t.Cleanup(func() { installSliceBudgetCRD(t) })
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	require.NoError(t, err)
	testkit.Eventually(t, "the SliceBudget CRD gone, and the API server serving no SliceBudgets", func() bool {
		if !apierrors.IsNotFound(cp.Client.Get(ctx, client.ObjectKeyFromObject(sb), &apiextensionsv1.CustomResourceDefinition{})) {
			return false
		}
		_, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
		return apierrors.IsNotFound(err)
	})
}

// installSliceBudgetCRD installs the SliceBudget CRD, if missing, and waits
// until SliceBudgets are served.
func installSliceBudgetCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	sb, err := crd.SliceBudgets()
	require.NoError(t, err)
	if err := cp.Client.Create(ctx, sb); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	testkit.Eventually(t, "SliceBudgets served", func() bool {
		return cp.Client.List(ctx, &v1alpha1.SliceBudgetList{}) == nil
	})
}

// Issue 42's item 4: WAITING counted Accepted slices whose larger offer
// waits, so that ten slices showed 9 accepted and 4 waiting. Accepted
// counts the slices holding an acceptance, the growing ones included;
// Waiting the slices that hold none and wait; no slice in both, for the
// budget and for its consumer.
func TestSliceBudgetCountsEachSliceOnce(t *testing.T) {
	c := sbClient(t)
	ns := testkit.Namespace(t, cp, "sb-count")
	createSliceBudget(t, c, "sb-count", v1alpha1.SliceBudgetSpec{Total: cpuList("10")})
	objectClass(t, "sb-count", "sb-count")

	names := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"}
	for _, n := range names {
		create(t, sliceIn(ns, n, "sb-count"))
	}
	for _, n := range names {
		require.True(t, conditions.IsAccepted(waitForDecision(t, ns, n)), n)
	}
	for _, n := range names[:3] {
		setCPURequest(t, ns, n, "3") // 2 more each, with 1 free: their growth waits
	}
	create(t, sliceIn(ns, "s9", "sb-count", slicetest.WithRequest(corev1.ResourceCPU, "2")))
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, conditions.Get(waitForDecision(t, ns, "s9"), authv1beta1.ResourceSliceConditionTypeResources).Status)
	testkit.Eventually(t, "the three growing slices told that their larger offer waits", func() bool {
		for _, n := range names[:3] {
			if cond := conditions.Get(get(t, ns, n), authv1beta1.ResourceSliceConditionTypeResources); cond == nil || !strings.Contains(cond.Message, "the larger one waits") {
				return false
			}
		}
		return true
	})

	var st v1alpha1.SliceBudgetStatus
	testkit.Eventually(t, "status: 9 accepted, 1 waiting", func() bool {
		st = sliceBudget(t, c, "sb-count").Status
		return cpuIs(st.Used, "9") && st.Accepted == 9 && st.Waiting == 1
	})
	require.Len(t, st.Consumers, 1)
	assert.Equal(t, int32(1), st.Consumers[0].Waiting, "the consumer's waiting slices are counted the same way")
}
