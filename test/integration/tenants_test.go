package integration

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The tenant rule, with the Tenant watch re-evaluating slices: a drained
// tenant loses its grants, an active one gets them back, a cordoned one keeps
// what it has and gets nothing new.
func TestTenantRule(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "tenant")
	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)
	tenant.Namespace = ns
	require.NoError(t, cp.Client.Create(ctx, tenant))
	var c calls
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "ten", accept("Granted", &c))
	})
	setTenant := func(cond authv1beta1.TenantCondition) {
		t.Helper()
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(tenant), tenant); err != nil {
				return err
			}
			tenant.Spec.TenantCondition = cond
			return cp.Client.Update(ctx, tenant)
		}))
	}
	// is reports whether the named slice's Resources condition is want,
	// written "Status/Reason".
	is := func(name, want string) func() bool {
		return func() bool {
			c := conditions.Get(get(t, ns, name), authv1beta1.ResourceSliceConditionTypeResources)
			return c != nil && string(c.Status)+"/"+c.Reason == want
		}
	}

	create(t, sliceIn(ns, "a", "ten"))
	testkit.Eventually(t, "a accepted", is("a", "Accepted/Granted"))

	setTenant(authv1beta1.TenantConditionDrained)
	testkit.Eventually(t, "a denied after drain", is("a", "Denied/"+"TenantDrained"))

	setTenant(authv1beta1.TenantConditionActive)
	testkit.Eventually(t, "a accepted again", is("a", "Accepted/Granted"))

	setTenant(authv1beta1.TenantConditionCordoned)
	create(t, sliceIn(ns, "b", "ten"))
	testkit.Eventually(t, "new slice denied while cordoned", is("b", "Denied/"+"TenantCordoned"))
	testkit.Consistently(t, time.Second, "a cordoned tenant keeps what it has", is("a", "Accepted/Granted"))
}
