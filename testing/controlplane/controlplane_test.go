package controlplane_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

func TestStartInstallsLiqoCRDsAndCountsRequests(t *testing.T) {
	cp := controlplane.Start(t)
	ctx := context.Background()
	var tenants authv1beta1.TenantList
	if err := cp.Client.List(ctx, &tenants); err != nil {
		t.Fatalf("listing Tenants on a fresh control plane: %v", err)
	}
	if err := cp.CreateNamespace(ctx, slicetest.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	rs := slicetest.NewSlice("s")
	if err := cp.Client.Create(ctx, rs); err != nil {
		t.Fatalf("creating a ResourceSlice: %v", err)
	}
	before, err := cp.RequestCount(ctx, "PATCH", "resourceslices", "status")
	if err != nil {
		t.Fatal(err)
	}
	orig := rs.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	for range 2 {
		if err := cp.Client.Status().Patch(ctx, rs, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}
	after, err := cp.RequestCount(ctx, "PATCH", "resourceslices", "status")
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 2 {
		t.Errorf("RequestCount: want 2 more status PATCHes, got %d", after-before)
	}
	if n, _ := cp.RequestCount(ctx, "PATCH", "tenants", "status"); n != 0 {
		t.Errorf("RequestCount must filter by resource: got %d tenant status PATCHes", n)
	}
}
