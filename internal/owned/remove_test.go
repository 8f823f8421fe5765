package owned_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/owned"
)

// setOf is a slice's set: a ConfigMap in its namespace, one in the
// accounting namespace and a PriorityClass, all named after the slice (a
// name that fits in an object name).
func setOf(rs *authv1beta1.ResourceSlice) []client.Object {
	name := rs.Name[:min(len(rs.Name), 63)]
	return []client.Object{configMap(rs.Namespace, name, nil), configMap(accounting, name, nil), priorityClass(name, 1)}
}

// existing lists which objects of set exist.
func existing(t *testing.T, c client.Reader, set []client.Object) []string {
	t.Helper()
	var out []string
	for _, o := range set {
		if exists(t, c, o.DeepCopyObject().(client.Object)) {
			out = append(out, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetNamespace()+"/"+o.GetName())
		}
	}
	return out
}

// Remove deletes every object of the slice, by UID, or by namespace and
// name when the UID is unknown, and leaves other slices' objects.
func TestRemove(t *testing.T) {
	long := strings.Repeat("a-very-long-slice-name-", 5)
	cases := []struct {
		reason string
		rs     *authv1beta1.ResourceSlice
		uid    types.UID
	}{
		{reason: "by UID", rs: slice("s1", "uid-1"), uid: "uid-1"},
		{reason: "by name, the UID unknown", rs: slice("s1", "uid-1")},
		{reason: "by name, a name longer than a label value", rs: slice(long, "uid-1")},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := newFakeEnv(t)
			ctx := context.Background()
			other := slice("s2", "uid-2")
			for _, rs := range []*authv1beta1.ResourceSlice{tc.rs, other} {
				if _, err := e.a.Apply(ctx, rs, setOf(rs)); err != nil {
					t.Fatal(err)
				}
			}
			cm := configMap(sliceNS, setOf(tc.rs)[0].GetName(), nil)
			exists(t, e.c, cm)
			if errs := validation.IsValidLabelValue(cm.Labels[owned.LabelSliceName]); len(errs) > 0 {
				t.Errorf("slice-name label %q: %v", cm.Labels[owned.LabelSliceName], errs)
			}

			r, err := e.a.Remove(ctx, types.NamespacedName{Namespace: tc.rs.Namespace, Name: tc.rs.Name}, tc.uid)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Deleted) != 3 {
				t.Errorf("Deleted %v, want the slice's 3 objects", r.Deleted)
			}
			if got := existing(t, e.c, setOf(tc.rs)); len(got) > 0 {
				t.Errorf("left %v", got)
			}
			if got := existing(t, e.c, setOf(other)); len(got) != 3 {
				t.Errorf("of another slice's objects, only %v are left", got)
			}
		})
	}
}

// Sweep deletes the objects of every slice that is not live, wherever they
// are, and keeps the live slices'. After a restart, the kinds named by
// WithTypes are swept though nothing has been applied since; a kind not
// named is not.
func TestSweep(t *testing.T) {
	e := newFakeEnv(t)
	ctx := context.Background()
	gone, live := slice("gone", "uid-gone"), slice("live", "uid-live")
	for _, rs := range []*authv1beta1.ResourceSlice{gone, live} {
		if _, err := e.a.Apply(ctx, rs, setOf(rs)); err != nil {
			t.Fatal(err)
		}
	}
	isLive := func(uid types.UID) bool { return uid == live.UID }

	restarted := e.applier(t, owned.WithTypes(&corev1.ConfigMap{}))
	r, err := restarted.Sweep(ctx, isLive)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs(t, e.c.Scheme(), configMap(sliceNS, "gone", nil), configMap(accounting, "gone", nil)), r.Deleted); diff != "" {
		t.Errorf("Sweep knowing ConfigMaps only: Deleted -want +got:\n%s", diff)
	}

	restarted = e.applier(t, owned.WithTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}))
	e.calls.take()
	if r, err = restarted.Sweep(ctx, isLive); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs(t, e.c.Scheme(), priorityClass("gone", 0)), r.Deleted); diff != "" {
		t.Errorf("Sweep knowing PriorityClasses too: Deleted -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"list": 2, "delete": 1}, e.calls.take()); diff != "" {
		t.Errorf("API calls -want +got:\n%s", diff)
	}
	if got := existing(t, e.c, setOf(gone)); len(got) > 0 {
		t.Errorf("left %v of the gone slice", got)
	}
	if got := existing(t, e.c, setOf(live)); len(got) != 3 {
		t.Errorf("of the live slice's objects, only %v are left", got)
	}
}
