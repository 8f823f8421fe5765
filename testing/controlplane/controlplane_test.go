package controlplane_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
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
	before, err := cp.RequestCount(ctx, "PATCH", "resourceslices", "status")
	require.NoError(t, err)

	orig := rs.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	for range 2 {
		require.NoError(t, cp.Client.Status().Patch(ctx, rs, client.MergeFrom(orig)))
	}

	after, err := cp.RequestCount(ctx, "PATCH", "resourceslices", "status")
	require.NoError(t, err)
	assert.Equal(t, 2, after-before, "RequestCount: status PATCHes on resourceslices")
	n, err := cp.RequestCount(ctx, "PATCH", "tenants", "status")
	require.NoError(t, err)
	assert.Zero(t, n, "RequestCount must filter by resource")
}
