package grantrecords_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/grantrecords"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// On a real API server, served as a user serves it (AddToManager with
// WithOwnedTypes): what Owned returns applies as it is (names, scopes and
// the PriorityClass pass the server's validation), and the objects go when
// the slice does. Neither can have an ownerReference to the slice, so no
// garbage collector is needed: the SDK deletes them by label.
func TestOwnedAppliesOnAPIServer(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	ns, err := envkit.CreateConsumer(ctx, cp.Client, slicetest.DefaultConsumer)
	require.NoError(t, err)
	require.NoError(t, cp.CreateNamespace(ctx, grantrecords.DefaultNamespace))
	p, err := grantrecords.New()
	require.NoError(t, err)
	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, grantrecords.DefaultClass, p,
			resourceslice.WithOwnedTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}))
	})

	rs := slicetest.NewSlice("s1", slicetest.WithNamespace(ns), slicetest.WithClass(grantrecords.DefaultClass),
		slicetest.WithRequest(corev1.ResourceCPU, "4"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	objs, err := p.Owned(ctx, rs)
	require.NoError(t, err)
	record, pc := objs[0].(*corev1.ConfigMap), objs[1].(*schedulingv1.PriorityClass)

	envkit.Eventually(t, "the grant record and the PriorityClass applied", func() bool {
		return exists(ctx, t, cp.Client, record) && exists(ctx, t, cp.Client, pc)
	})
	wctx, cancel := context.WithTimeout(ctx, envkit.WaitTimeout)
	defer cancel()
	decided, err := slicetest.WaitForDecision(wctx, cp.Client, client.ObjectKeyFromObject(rs))
	require.NoError(t, err)
	assert.True(t, conditions.IsAccepted(decided))
	assert.Equal(t, "cpu=4", record.Data[grantrecords.KeyResources])
	assert.Equal(t, string(rs.UID), record.Data[grantrecords.KeySliceUID])
	assert.Equal(t, grantrecords.DefaultPriority, pc.Value)

	require.NoError(t, cp.Client.Delete(ctx, rs))
	envkit.Eventually(t, "the record and the PriorityClass deleted with the slice", func() bool {
		return !exists(ctx, t, cp.Client, record) && !exists(ctx, t, cp.Client, pc)
	})
}

// exists reads obj into itself and reports whether it is there.
func exists(ctx context.Context, t *testing.T, c client.Client, obj client.Object) bool {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}
