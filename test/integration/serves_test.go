package integration

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Defect (issue 11): a Tenant event enqueued a slice the selector excluded,
// and Reconcile, which did not check the selector, wrote Denied on it. The
// "serves" rule now lives in one place for the predicate, the Tenant mapping
// and Reconcile.
func TestTenantEventHonoursSelector(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "serves-tenant")
	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)
	tenant.Namespace = ns
	require.NoError(t, cp.Client.Create(ctx, tenant))
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "serves", accept("Granted", nil))
	})

	create(t, sliceIn(ns, "local", "serves", slicetest.NotReplicated()))
	create(t, sliceIn(ns, "replicated", "serves"))
	testkit.Eventually(t, "the replicated slice accepted", decided(ns, "replicated"))
	localRV := get(t, ns, "local").ResourceVersion

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(tenant), tenant); err != nil {
			return err
		}
		tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		return cp.Client.Update(ctx, tenant)
	}))
	// The replicated slice being denied proves the Tenant event was handled.
	testkit.Eventually(t, "the replicated slice denied after the drain", func() bool {
		c := conditions.Get(get(t, ns, "replicated"), authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Reason == "TenantDrained"
	})
	testkit.Consistently(t, 2*time.Second, "the slice outside the selector stays unwritten", func() bool {
		return get(t, ns, "local").ResourceVersion == localRV
	})
	assert.Nil(t, conditions.Get(get(t, ns, "local"), authv1beta1.ResourceSliceConditionTypeResources), "the SDK decided a slice its selector excludes")
}
