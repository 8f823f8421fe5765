package grantrecords_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/examples/grantrecords"
	"github.com/sliceclass/sliceclass/internal/owned"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// On a real API server, what Owned returns applies as it is (names, scopes
// and the PriorityClass pass the server's validation), and the objects go
// when the slice's grant is removed.
func TestOwnedAppliesOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx := context.Background()
	for _, ns := range []string{slicetest.DefaultNamespace, grantrecords.DefaultNamespace} {
		if err := cp.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	rs := slicetest.NewSlice("s1", slicetest.WithClass(grantrecords.DefaultClass), slicetest.WithRequest(corev1.ResourceCPU, "4"))
	if err := cp.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	p, err := grantrecords.New()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Handle(ctx, rs); err != nil {
		t.Fatal(err)
	}
	objs, err := p.Owned(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	a, err := owned.New(cp.Client, cp.Client, cp.Scheme, grantrecords.DefaultClass, owned.WithTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, rs, objs); err != nil {
		t.Fatal(err)
	}

	var record corev1.ConfigMap
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(objs[0]), &record); err != nil {
		t.Fatal(err)
	}
	if got := record.Data[grantrecords.KeyResources]; got != "cpu=4" {
		t.Errorf("recorded resources %q", got)
	}
	var pc schedulingv1.PriorityClass
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(objs[1]), &pc); err != nil {
		t.Fatal(err)
	}
	if pc.Value != grantrecords.DefaultPriority {
		t.Errorf("PriorityClass value %d", pc.Value)
	}

	if _, err := a.Remove(ctx, client.ObjectKeyFromObject(rs), rs.UID); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil {
			t.Errorf("%s/%s left after Remove", obj.GetNamespace(), obj.GetName())
		}
	}
}
