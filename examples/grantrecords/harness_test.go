package grantrecords_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/examples/grantrecords"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The harness runs the real reconciler: an accepted gold slice gets its
// grant record and PriorityClass applied, in a few assertable lines; a
// denial removes them; and nothing is applied in a dry run.
func TestHarnessShowsOwnedObjects(t *testing.T) {
	p, err := grantrecords.New(grantrecords.WithClass("gold"))
	require.NoError(t, err)
	owns := resourceslice.WithOwnedTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{})
	s := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest(corev1.ResourceCPU, "2"))
	h := slicetest.New(t, "gold", p, slicetest.WithObjects(s), slicetest.WithReconcilerOptions(owns))

	res := h.Reconcile(s)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision)
	name := "gold." + s.Namespace + ".s1"
	assert.Equal(t, []string{"ConfigMap sliceclass-accounting/" + name, "PriorityClass " + name}, res.Applied)
	assert.Empty(t, res.Pruned)
	var cm corev1.ConfigMap
	require.NoError(t, h.Client.Get(context.Background(), types.NamespacedName{Namespace: "sliceclass-accounting", Name: name}, &cm))
	assert.Equal(t, "gold", cm.Labels["sliceclass.io/class"], "labelled for the class")
	assert.Equal(t, string(res.Slice.UID), cm.Labels["sliceclass.io/slice-uid"], "labelled with the owning slice")
	assert.Empty(t, cm.OwnerReferences, "another namespace: no ownerReference, the sweep finds it by label")

	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, "Drained")
	require.NoError(t, h.Client.Create(context.Background(), tenant))
	res = h.Reconcile(s)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
	assert.ElementsMatch(t, []string{"ConfigMap sliceclass-accounting/" + name, "PriorityClass " + name}, res.Pruned, "a denial removes the grant's objects")

	dry := slicetest.New(t, "gold", p, slicetest.WithObjects(slicetest.NewSlice("s2", slicetest.WithClass("gold"))),
		slicetest.WithReconcilerOptions(owns, resourceslice.WithDryRun()))
	res = dry.Reconcile(slicetest.NewSlice("s2", slicetest.WithClass("gold")))
	require.NoError(t, res.Err)
	assert.Empty(t, res.Applied, "a dry run applies nothing")
}

// An object of a type not declared with WithOwnedTypes is refused with an
// event, and the decision stands.
func TestUndeclaredOwnedTypeIsRefused(t *testing.T) {
	p, err := grantrecords.New(grantrecords.WithClass("gold"))
	require.NoError(t, err)
	s := slicetest.NewSlice("s1", slicetest.WithClass("gold"))
	h := slicetest.New(t, "gold", p, slicetest.WithObjects(s),
		slicetest.WithReconcilerOptions(resourceslice.WithOwnedTypes(&corev1.ConfigMap{})))
	res := h.Reconcile(s)
	require.Error(t, res.Err, "retried with backoff")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision, "the decision already written stands")
	assert.Empty(t, res.Applied)
	var reasons []string
	for _, e := range res.Events {
		reasons = append(reasons, e.Reason)
	}
	assert.Contains(t, reasons, "OwnedApplyFailed")
}
