package resourceslice

import (
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

func TestSlicePredicate(t *testing.T) {
	p := scope{class: predGold, selector: replicatedSelector()}.predicate()
	base := replicatedSlice("a", predGold)
	mut := func(f func(*authv1beta1.ResourceSlice)) *authv1beta1.ResourceSlice {
		c := base.DeepCopy()
		f(c)
		return c
	}
	cases := map[string]struct {
		reason   string
		old, new *authv1beta1.ResourceSlice
		want     bool
	}{
		"OwnStatusWrite": {
			reason: "Our own status write must not re-trigger the controller.",
			old:    base, new: mut(func(rs *authv1beta1.ResourceSlice) {
				conditions.Accept(rs, "Granted", "")
				rs.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
				rs.ResourceVersion = "2"
			}),
		},
		"AuthParamsOnly": {
			reason: "A certificate renewal alone changes nothing to decide.",
			old:    base, new: mut(func(rs *authv1beta1.ResourceSlice) { rs.Status.AuthParams.SignedCRT = []byte("new") }),
		},
		"AuthenticationChanged": {
			reason: "The authentication gate opens on an Authentication change.",
			old:    mut(func(rs *authv1beta1.ResourceSlice) { rs.Status.Conditions = nil }), new: base, want: true,
		},
		"Generation": {
			reason: "A spec change (new generation) is relevant.",
			old:    base, new: mut(func(rs *authv1beta1.ResourceSlice) { rs.Generation++ }), want: true,
		},
		"Labels": {
			reason: "A label change is relevant.",
			old:    base, new: mut(func(rs *authv1beta1.ResourceSlice) { rs.Labels["x"] = "y" }), want: true,
		},
		"Deletion": {
			reason: "Deletion starting is relevant.",
			old:    base, new: mut(func(rs *authv1beta1.ResourceSlice) { now := metav1.Now(); rs.DeletionTimestamp = &now }), want: true,
		},
		"MovedAway": {
			reason: "A slice leaving the class is seen by the old class (old object matches).",
			old:    base, new: mut(func(rs *authv1beta1.ResourceSlice) { rs.Spec.Class = "silver"; rs.Generation++ }), want: true,
		},
		"MovedIn": {
			reason: "A slice entering the class is seen (new object matches).",
			old:    mut(func(rs *authv1beta1.ResourceSlice) { rs.Spec.Class = "silver" }), new: mut(func(rs *authv1beta1.ResourceSlice) { rs.Generation++ }), want: true,
		},
		"NeverOurs": {
			reason: "Other classes' slices are filtered.",
			old:    mut(func(rs *authv1beta1.ResourceSlice) { rs.Spec.Class = "silver" }),
			new:    mut(func(rs *authv1beta1.ResourceSlice) { rs.Spec.Class = "silver"; rs.Generation++ }),
		},
		"NotReplicated": {
			reason: "The default selector serves replicated slices only.",
			old:    localSlice("a", predGold),
			new: func() *authv1beta1.ResourceSlice {
				rs := localSlice("a", predGold)
				rs.Generation++
				return rs
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("%s\nUpdate: want %v, got %v", tc.reason, tc.want, got)
			}
		})
	}

	if !p.Create(event.CreateEvent{Object: base}) {
		t.Error("creating a slice of the class must pass")
	}
	if p.Create(event.CreateEvent{Object: replicatedSlice("b", "silver")}) {
		t.Error("creating a slice of another class must not pass")
	}
	if !p.Delete(event.DeleteEvent{Object: base}) {
		t.Error("deleting a slice of the class must pass: what it held is given back")
	}
	if p.Delete(event.DeleteEvent{Object: replicatedSlice("b", "silver")}) {
		t.Error("deleting a slice of another class must not pass")
	}
	if p.Create(event.CreateEvent{Object: &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "liqo-tenant-c"}, Spec: authv1beta1.TenantSpec{TenantCondition: authv1beta1.TenantConditionActive}}}) {
		t.Error("objects that are not slices must not pass")
	}
	all := scope{class: predGold, selector: labels.Everything()}.predicate()
	if !all.Create(event.CreateEvent{Object: localSlice("a", predGold)}) {
		t.Error("labels.Everything() must serve local slices too")
	}
}

func TestTenantPredicate(t *testing.T) {
	p := tenantPredicate()
	a := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "liqo-tenant-c"}, Spec: authv1beta1.TenantSpec{TenantCondition: authv1beta1.TenantConditionActive}}
	d := a.DeepCopy()
	d.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	if !p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: d}) {
		t.Error("a tenant condition change must pass")
	}
	same := a.DeepCopy()
	same.Spec.PublicKey = []byte("k")
	if p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: same}) {
		t.Error("changes that cannot move the verdict must not pass")
	}
}

const predGold = "gold"

// localSlice is a slice of class created in this cluster (not replicated),
// authenticated by Liqo.
func localSlice(name, class string) *authv1beta1.ResourceSlice {
	rs := &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "liqo-tenant-consumer", ResourceVersion: "1", Generation: 1},
		Spec: authv1beta1.ResourceSliceSpec{Class: authv1beta1.ResourceSliceClass(class),
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
	}
	sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "Accepted", "")
	rs.Status.AuthParams = &authv1beta1.AuthParams{CA: []byte("ca")}
	return rs
}

// replicatedSlice is a slice of class replicated from a consumer.
func replicatedSlice(name, class string) *authv1beta1.ResourceSlice {
	rs := localSlice(name, class)
	rs.Labels = map[string]string{labelOriginID: "consumer", labelReplicated: "true"}
	return rs
}
