package controlplane_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

func TestStartInstallsLiqoCRDs(t *testing.T) {
	cp := controlplane.Start(t)
	var list authv1beta1.ResourceSliceList
	if err := cp.Client.List(context.Background(), &list); err != nil {
		t.Fatalf("listing ResourceSlices on a fresh control plane: %v", err)
	}
	var tenants authv1beta1.TenantList
	if err := cp.Client.List(context.Background(), &tenants); err != nil {
		t.Fatalf("listing Tenants on a fresh control plane: %v", err)
	}
}
