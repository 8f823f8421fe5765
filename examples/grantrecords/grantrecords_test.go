package grantrecords_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/grantrecords"
	"github.com/sliceclass/sliceclass/handler"
)

// granted is a slice as the SDK passes it to Owned: Accepted, with
// status.resources set.
func granted(ns, name string, resources corev1.ResourceList) *authv1beta1.ResourceSlice {
	rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name[:min(len(name), 8)])}}
	rs.Spec.Resources = resources
	rs.Status.Resources = resources.DeepCopy()
	conditions.Accept(rs, grantrecords.ReasonGranted, "")
	return rs
}

func mustNew(t *testing.T, opts ...grantrecords.Option) *grantrecords.Policy {
	t.Helper()
	p, err := grantrecords.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Owned returns the grant record in the accounting namespace and a
// cluster-scoped PriorityClass, named after the class and the slice.
func TestOwned(t *testing.T) {
	rs := granted("liqo-tenant-a", "s1", corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1"),
	})
	cases := []struct {
		reason   string
		opts     []grantrecords.Option
		wantName string
		wantNS   string
		wantPrio int32
	}{
		{reason: "defaults", wantName: "gold.liqo-tenant-a.s1", wantNS: grantrecords.DefaultNamespace, wantPrio: grantrecords.DefaultPriority},
		{reason: "every option", opts: []grantrecords.Option{
			grantrecords.WithClass("silver"), grantrecords.WithNamespace("billing"), grantrecords.WithPriority(10),
		}, wantName: "silver.liqo-tenant-a.s1", wantNS: "billing", wantPrio: 10},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			p := mustNew(t, tc.opts...)
			objs, err := p.Owned(context.Background(), rs)
			if err != nil {
				t.Fatal(err)
			}
			class := strings.SplitN(tc.wantName, ".", 2)[0]
			want := []client.Object{
				&corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: tc.wantNS, Name: tc.wantName},
					Data: map[string]string{
						grantrecords.KeyClass: class, grantrecords.KeySliceNamespace: "liqo-tenant-a", grantrecords.KeySliceName: "s1",
						grantrecords.KeySliceUID: "uid-s1", grantrecords.KeyResources: "cpu=4\nmemory=8Gi\nnvidia.com/gpu=1",
					},
				},
				&schedulingv1.PriorityClass{
					ObjectMeta:  metav1.ObjectMeta{Name: tc.wantName},
					Value:       tc.wantPrio,
					Description: "Pods offloaded by the consumer of slice liqo-tenant-a/s1, class " + class + ".",
				},
			}
			if diff := cmp.Diff(want, objs); diff != "" {
				t.Errorf("Owned -want +got:\n%s", diff)
			}
		})
	}
}

// Every slice gets objects of its own, with valid names: two slices of one
// consumer, names that a dash-joined name would confuse, and names too long
// for an object name.
func TestOwnedNames(t *testing.T) {
	p := mustNew(t)
	long := strings.Repeat("x", 253)
	slices := []*authv1beta1.ResourceSlice{
		granted("liqo-tenant-a", "s1", nil),
		granted("liqo-tenant-a", "s2", nil),
		granted("a-b", "c", nil),
		granted("a", "b-c", nil),
		granted("liqo-tenant-a", long, nil),
		granted("liqo-tenant-a", long[:252]+"y", nil),
	}
	seen := map[string]string{}
	for _, rs := range slices {
		objs, err := p.Owned(context.Background(), rs)
		if err != nil {
			t.Fatal(err)
		}
		name := objs[0].GetName()
		if objs[1].GetName() != name {
			t.Errorf("slice %s/%s: record %q and PriorityClass %q differ", rs.Namespace, rs.Name, name, objs[1].GetName())
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("slice %s/%s: name %q: %v", rs.Namespace, rs.Name, name, errs)
		}
		key := rs.Namespace + "/" + rs.Name
		if other, ok := seen[name]; ok {
			t.Errorf("slices %s and %s share the name %q", other, key, name)
		}
		seen[name] = key
		if objs[0].GetNamespace() == "" || objs[1].GetNamespace() != "" {
			t.Errorf("record namespace %q, PriorityClass namespace %q: want the record namespaced, the PriorityClass not",
				objs[0].GetNamespace(), objs[1].GetNamespace())
		}
	}
}

// By default the policy grants what is asked; WithHandler decides instead.
func TestHandle(t *testing.T) {
	ask := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	deny := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Deny(rs, "Full", "no room")
		return ctrl.Result{}, nil
	})
	cases := []struct {
		reason       string
		opts         []grantrecords.Option
		wantAccepted bool
		want         corev1.ResourceList
	}{
		{reason: "grants what is asked", wantAccepted: true, want: ask},
		{reason: "the wrapped handler denies", opts: []grantrecords.Option{grantrecords.WithHandler(deny)}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			rs := &authv1beta1.ResourceSlice{}
			rs.Spec.Resources = ask.DeepCopy()
			if _, err := mustNew(t, tc.opts...).Handle(context.Background(), rs); err != nil {
				t.Fatal(err)
			}
			if conditions.IsAccepted(rs) != tc.wantAccepted {
				t.Errorf("accepted %v, want %v", conditions.IsAccepted(rs), tc.wantAccepted)
			}
			if diff := cmp.Diff(tc.want, rs.Status.Resources); diff != "" {
				t.Errorf("status.resources -want +got:\n%s", diff)
			}
		})
	}
}

// New refuses options that cannot work, naming them.
func TestNew(t *testing.T) {
	cases := []struct {
		reason string
		opt    grantrecords.Option
		want   string
	}{
		{reason: "a class that cannot prefix a name", opt: grantrecords.WithClass("Gold_1"), want: `class "Gold_1" prefixes object names`},
		{reason: "a namespace that is not one", opt: grantrecords.WithNamespace("billing.acme"), want: `namespace "billing.acme"`},
		{reason: "a priority the API server refuses", opt: grantrecords.WithPriority(2_000_000_000), want: "priority 2000000000 is above 1000000000"},
		{reason: "no handler", opt: grantrecords.WithHandler(nil), want: "WithHandler(nil)"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := grantrecords.New(tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
