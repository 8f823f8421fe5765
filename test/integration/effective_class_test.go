package integration

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/statusclass/statusclasstest"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Effective class (issue 11, Liqo PR #3348): on a server whose ResourceSlice
// CRD has status.class, a slice with spec.class "" and status.class
// "eff-gold" is decided by the eff-gold controller and by no other, even
// though the pinned Go types drop status.class; and status.class survives
// the controller's write.
func TestEffectiveClassFromStatus(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "effective-class")
	extendCRDWithStatusClass(t)

	rs := sliceIn(ns, "resolved", "")
	create(t, rs)
	setStatusClass(t, client.ObjectKeyFromObject(rs), "eff-gold")
	rv := get(t, ns, "resolved").ResourceVersion

	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, "eff-silver", accept("SilverPolicy", nil)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "eff-gold", accept("GoldPolicy", nil))
	})
	testkit.Eventually(t, "the slice decided", decided(ns, "resolved"))
	got := get(t, ns, "resolved")
	assert.Equal(t, "GoldPolicy", conditions.Get(got, authv1beta1.ResourceSliceConditionTypeResources).Reason, "decided by the wrong class")
	assert.NotEqual(t, rv, got.ResourceVersion)
	assert.Equal(t, "eff-gold", statusClass(t, client.ObjectKeyFromObject(rs)), "status.class lost in our write")
	testkit.Consistently(t, time.Second, "no second writer", func() bool {
		return conditions.Get(get(t, ns, "resolved"), authv1beta1.ResourceSliceConditionTypeResources).Reason == "GoldPolicy"
	})
	var mf []string
	for _, m := range got.ManagedFields {
		if m.Subresource == "status" {
			mf = append(mf, m.Manager)
		}
	}
	assert.Contains(t, mf, "sliceclass-eff-gold", "the status patch names its class controller")
	assert.NotContains(t, mf, "sliceclass-eff-silver")
}

// extendCRDWithStatusClass adds status.class to the ResourceSlice CRD, as a
// Liqo release newer than our pinned types does, and waits until the API
// server both keeps the field and publishes it in OpenAPI v3.
func extendCRDWithStatusClass(t *testing.T) {
	t.Helper()
	require.NoError(t, statusclasstest.Declare(context.Background(), cp.Client, cp.Config, true))
}

func setStatusClass(t *testing.T, key types.NamespacedName, class string) {
	t.Helper()
	testkit.Eventually(t, "status.class kept by the server", func() bool {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind))
		if err := cp.Client.Get(context.Background(), key, u); err != nil {
			return false
		}
		_ = unstructured.SetNestedField(u.Object, class, "status", "class")
		if err := cp.Client.Status().Update(context.Background(), u); err != nil {
			return false
		}
		return statusClass(t, key) == class
	})
}

func statusClass(t *testing.T, key types.NamespacedName) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind))
	require.NoError(t, cp.Client.Get(context.Background(), key, u))
	v, _, _ := unstructured.NestedString(u.Object, "status", "class")
	return v
}

// status.class wins over spec.class, as Liqo's EffectiveClass() says (issue
// 18): a slice with spec.class "eff2-gold" and status.class "eff2-silver"
// is decided by the silver controller only.
func TestEffectiveClassStatusWinsOverSpec(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "effective-class-wins")
	extendCRDWithStatusClass(t)

	rs := sliceIn(ns, "moved", "eff2-gold")
	create(t, rs)
	setStatusClass(t, client.ObjectKeyFromObject(rs), "eff2-silver")

	var gold calls
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := resourceslice.AddToManager(mgr, "eff2-gold", accept("GoldPolicy", &gold)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "eff2-silver", accept("SilverPolicy", nil))
	})
	testkit.Eventually(t, "the slice decided", decided(ns, "moved"))
	assert.Equal(t, "SilverPolicy", conditions.Get(get(t, ns, "moved"), authv1beta1.ResourceSliceConditionTypeResources).Reason, "status.class names the class")
	testkit.Consistently(t, time.Second, "the spec's class never decides it", func() bool {
		return gold.get("moved") == 0 && conditions.Get(get(t, ns, "moved"), authv1beta1.ResourceSliceConditionTypeResources).Reason == "SilverPolicy"
	})
}
