package integration

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Two served classes, an unserved class, "" and "default": each served class
// decides its own slices; the others are never written.
func TestClassesAreIsolated(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "isolation")
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
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
	gold := waitForDecision(t, ns, "g")
	silver := waitForDecision(t, ns, "s")
	assert.Equal(t, "GoldPolicy", conditions.Get(gold, authv1beta1.ResourceSliceConditionTypeResources).Reason, "gold slice decided by the wrong class")
	assert.Equal(t, "SilverPolicy", conditions.Get(silver, authv1beta1.ResourceSliceConditionTypeResources).Reason, "silver slice decided by the wrong class")

	testkit.Consistently(t, time.Second, "slices of unserved classes stay unwritten", func() bool {
		for n, rv := range before {
			if got := get(t, ns, n); got.ResourceVersion != rv || conditions.Get(got, authv1beta1.ResourceSliceConditionTypeResources) != nil {
				t.Logf("slice %s of an unserved class was written: rv %s→%s, conditions %+v", n, rv, got.ResourceVersion, got.Status.Conditions)
				return false
			}
		}
		return true
	})
}

// A slice moved from class A to B: B decides, A never touches it again.
func TestClassMove(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns := testkit.Namespace(t, cp, "move")
	var ca, cb calls
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, "move-a", accept("PolicyA", &ca)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "move-b", accept("PolicyB", &cb))
	})
	create(t, sliceIn(ns, "m", "move-a"))
	waitForDecision(t, ns, "m")
	callsByA := ca.get("m")
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := get(t, ns, "m")
		rs.Spec.Class = "move-b"
		return cp.Client.Update(ctx, rs)
	}))
	testkit.Eventually(t, "decided by B", func() bool {
		c := conditions.Get(get(t, ns, "m"), authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Reason == "PolicyB"
	})
	testkit.Consistently(t, time.Second, "class A leaves the moved slice alone", func() bool {
		return ca.get("m") == callsByA
	})
}
