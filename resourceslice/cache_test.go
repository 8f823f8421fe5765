package resourceslice_test

import (
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

func TestTrimSlice(t *testing.T) {
	var opts cache.Options
	resourceslice.DropUnreadSliceFields(&opts)
	trim := opts.DefaultTransform
	rs := goldSlice("a")
	rs.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "liqo"}}
	out, err := trim(rs)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*authv1beta1.ResourceSlice)
	if got.ManagedFields != nil || got.Spec.CSR != nil || got.Status.AuthParams != nil {
		t.Errorf("managedFields, csr and authParams must be dropped: %+v", got)
	}
	if got.Spec.Resources.Cpu().Value() != 2 || string(got.Spec.Class) != gold || got.Labels["liqo.io/originID"] != slicetest.DefaultConsumer ||
		!conditions.IsAuthenticated(got) || got.Labels["liqo.io/replicated"] != "true" {
		t.Errorf("what a handler reads must be kept: %+v", got)
	}
	tenant := slicetest.NewTenant("c", authv1beta1.TenantConditionActive)
	tenant.Spec.PublicKey = []byte("k")
	if out, _ := trim(tenant); string(out.(*authv1beta1.Tenant).Spec.PublicKey) != "k" {
		t.Error("other objects must pass through unchanged")
	}
}

func TestTrimCacheKeepsExistingSettings(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"x": "y"})
	called := false
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&authv1beta1.ResourceSlice{}: {Label: sel, Transform: func(o any) (any, error) { called = true; return o, nil }},
	}}
	resourceslice.DropUnreadSliceFields(&opts)
	if len(opts.ByObject) != 1 {
		t.Fatalf("want one ByObject entry, got %d", len(opts.ByObject))
	}
	for _, v := range opts.ByObject {
		if v.Label.String() != sel.String() {
			t.Errorf("label selector lost: %v", v.Label)
		}
		out, _ := v.Transform(goldSlice("a"))
		if !called || out.(*authv1beta1.ResourceSlice).Spec.CSR != nil {
			t.Error("the existing transform must run, then the trim")
		}
	}
	var empty cache.Options
	resourceslice.DropUnreadSliceFields(&empty)
	if len(empty.ByObject) != 0 || empty.DefaultTransform == nil {
		t.Errorf("DropUnreadSliceFields on empty options must need no scheme entry: want no ByObject entry and a default transform, got %d entries", len(empty.ByObject))
	}
	prior := false
	withDefault := cache.Options{DefaultTransform: func(o any) (any, error) { prior = true; return o, nil }}
	resourceslice.DropUnreadSliceFields(&withDefault)
	if out, _ := withDefault.DefaultTransform(goldSlice("a")); !prior || out.(*authv1beta1.ResourceSlice).Spec.CSR != nil {
		t.Error("an existing default transform must run, then the trim")
	}
}
