package owned_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/owned"
)

// Each object is applied under the class's field manager with the class's
// and the slice's labels; only the object in the slice's namespace gets an
// ownerReference; the handler's own labels are kept and its objects are not
// modified.
func TestApplyLabelsAndOwnerReference(t *testing.T) {
	e := newFakeEnv(t)
	rs := slice("s1", "uid-1")
	inSlice := configMap(sliceNS, "grant", map[string]string{"cpu": "4"})
	inSlice.Labels = map[string]string{"team": "a"}
	given := inSlice.DeepCopy()
	elsewhere := configMap(accounting, "s1", nil)
	pc := priorityClass("consumer-a", 1000)

	r, err := e.a.Apply(context.Background(), rs, []client.Object{inSlice, elsewhere, pc})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs(t, e.c.Scheme(), inSlice, elsewhere, pc), r.Applied); diff != "" {
		t.Errorf("Applied: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(given, inSlice); diff != "" {
		t.Errorf("Apply changed the handler's object: -before +after:\n%s", diff)
	}

	wantLabels := map[string]string{
		owned.LabelClass: class, owned.LabelSliceNamespace: sliceNS, owned.LabelSliceName: "s1", owned.LabelSliceUID: "uid-1",
	}
	wantOwner := []metav1.OwnerReference{{
		APIVersion: "authentication.liqo.io/v1beta1", Kind: "ResourceSlice", Name: "s1", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}}
	for _, tc := range []struct {
		obj        client.Object
		wantOwners []metav1.OwnerReference
		extra      map[string]string
	}{
		{obj: configMap(sliceNS, "grant", nil), wantOwners: wantOwner, extra: map[string]string{"team": "a"}},
		{obj: configMap(accounting, "s1", nil)},
		{obj: priorityClass("consumer-a", 0)},
	} {
		if !exists(t, e.c, tc.obj) {
			t.Fatalf("%s/%s not created", tc.obj.GetNamespace(), tc.obj.GetName())
		}
		want := map[string]string{}
		for k, v := range wantLabels {
			want[k] = v
		}
		for k, v := range tc.extra {
			want[k] = v
		}
		if diff := cmp.Diff(want, tc.obj.GetLabels()); diff != "" {
			t.Errorf("%s: labels -want +got:\n%s", tc.obj.GetName(), diff)
		}
		if diff := cmp.Diff(tc.wantOwners, tc.obj.GetOwnerReferences()); diff != "" {
			t.Errorf("%s: ownerReferences -want +got:\n%s", tc.obj.GetName(), diff)
		}
		if len(tc.obj.GetFinalizers()) > 0 {
			t.Errorf("%s: finalizers %v, want none ever", tc.obj.GetName(), tc.obj.GetFinalizers())
		}
		mf := tc.obj.GetManagedFields()
		if len(mf) != 1 || mf[0].Manager != "sliceclass-gold" || mf[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("%s: managedFields %+v, want one Apply entry of sliceclass-gold", tc.obj.GetName(), mf)
		}
	}
}

// A set that shrinks prunes only what it dropped. In the steady state an
// Apply lists each known kind once and applies nothing: no get, no apply.
func TestApplyPrunesWhatTheSetDropped(t *testing.T) {
	e := newFakeEnv(t)
	ctx := context.Background()
	rs := slice("s1", "uid-1")
	keep, drop, pc := configMap(sliceNS, "keep", nil), configMap(accounting, "drop", nil), priorityClass("consumer-a", 1)

	if _, err := e.a.Apply(ctx, rs, []client.Object{keep, drop, pc}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"list": 2, "get": 3, "apply": 3}, e.calls.take()); diff != "" {
		t.Errorf("first Apply, API calls -want +got:\n%s", diff)
	}
	if _, err := e.a.Apply(ctx, rs, []client.Object{keep, drop, pc}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"list": 2}, e.calls.take()); diff != "" {
		t.Errorf("steady Apply, API calls -want +got:\n%s", diff)
	}

	r, err := e.a.Apply(ctx, rs, []client.Object{keep, pc})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs(t, e.c.Scheme(), configMap(accounting, "drop", nil)), r.Pruned); diff != "" {
		t.Errorf("Pruned -want +got:\n%s", diff)
	}
	if exists(t, e.c, configMap(accounting, "drop", nil)) {
		t.Error("the dropped ConfigMap still exists")
	}
	if !exists(t, e.c, configMap(sliceNS, "keep", nil)) || !exists(t, e.c, priorityClass("consumer-a", 0)) {
		t.Error("an object still in the set was deleted")
	}

	r, err = e.a.Apply(ctx, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pruned) != 2 {
		t.Errorf("an empty set pruned %v, want both remaining objects", r.Pruned)
	}
}

// When one object's apply fails, the others are applied but nothing is
// pruned; once it succeeds, the prune happens.
func TestApplyPartialFailurePrunesNothing(t *testing.T) {
	e := newFakeEnv(t)
	ctx := context.Background()
	rs := slice("s1", "uid-1")
	if _, err := e.a.Apply(ctx, rs, []client.Object{configMap(sliceNS, "a", nil), configMap(sliceNS, "old", nil)}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	e.calls.failApplyOf("b", boom)
	e.calls.take()

	set := []client.Object{configMap(sliceNS, "a", map[string]string{"v": "2"}), configMap(sliceNS, "b", nil)}
	r, err := e.a.Apply(ctx, rs, set)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want it to wrap the apply's", err)
	}
	if want := "ConfigMap v1 liqo-tenant-a/b: applying: boom"; err.Error() != want {
		t.Errorf("error %q, want %q (naming the object)", err, want)
	}
	if len(r.Applied) != 1 || len(r.Failed) != 1 || len(r.Pruned) != 0 {
		t.Errorf("report %+v, want a applied, b failed, nothing pruned", r)
	}
	if n := e.calls.take()["delete"]; n != 0 {
		t.Errorf("%d deletes after a failed apply, want none", n)
	}
	if !exists(t, e.c, configMap(sliceNS, "old", nil)) {
		t.Fatal("old was pruned after a partial failure")
	}

	e.calls.failApplyOf("b", nil)
	if r, err = e.a.Apply(ctx, rs, set); err != nil || len(r.Pruned) != 1 {
		t.Fatalf("after the failure cleared: report %+v, error %v; want old pruned", r, err)
	}
}

// unknownKind is a Go type no scheme holds.
type unknownKind struct{ corev1.ConfigMap }

func (u *unknownKind) DeepCopyObject() runtime.Object {
	return &unknownKind{ConfigMap: *u.DeepCopy()}
}

// An object that can never be applied is refused with ErrInvalid and a
// message that says what to change; the valid object of the set is still
// applied, and nothing is pruned.
func TestApplyRefusesInvalidObjects(t *testing.T) {
	labelled := func(k, v string) client.Object {
		cm := configMap(sliceNS, "x", nil)
		cm.Labels = map[string]string{k: v}
		return cm
	}
	pc := priorityClass("p", 1)
	pc.Namespace = sliceNS
	controlled := configMap(sliceNS, "x", nil)
	controlled.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d-uid", Controller: ptr.To(true)}}
	cases := []struct {
		reason string
		obj    client.Object
		want   string
	}{
		{reason: "nil", obj: nil, want: "object 2 of 2: invalid owned object: nil object"},
		{reason: "a nil pointer", obj: (*corev1.ConfigMap)(nil), want: "object 2 of 2: invalid owned object: nil object"},
		{reason: "a type missing from the scheme", obj: &unknownKind{ConfigMap: *configMap(sliceNS, "x", nil)},
			want: "liqo-tenant-a/x: invalid owned object: Go type *owned_test.unknownKind is not in the scheme (register its group with AddToScheme)"},
		{reason: "no name", obj: configMap(sliceNS, "", nil),
			want: "ConfigMap v1: invalid owned object: no name (generateName is not supported: the name is how the next reconcile finds the object)"},
		{reason: "a namespaced kind without a namespace", obj: configMap("", "x", nil),
			want: `ConfigMap v1 x: invalid owned object: its kind is namespaced and it has no namespace (set one, e.g. the slice's, "liqo-tenant-a")`},
		{reason: "a cluster-scoped kind with a namespace", obj: pc,
			want: `PriorityClass scheduling.k8s.io/v1 liqo-tenant-a/p: invalid owned object: its kind is cluster-scoped and it has namespace "liqo-tenant-a" (leave it empty)`},
		{reason: "another class's label", obj: labelled(owned.LabelClass, "silver"),
			want: `ConfigMap v1 liqo-tenant-a/x: invalid owned object: it is labelled sliceclass.io/class="silver", but it is applied for sliceclass.io/class="gold"`},
		{reason: "another slice's label", obj: labelled(owned.LabelSliceUID, "uid-2"),
			want: `ConfigMap v1 liqo-tenant-a/x: invalid owned object: it is labelled sliceclass.io/slice-uid="uid-2", but it is applied for sliceclass.io/slice-uid="uid-1"`},
		{reason: "another controller", obj: controlled,
			want: "ConfigMap v1 liqo-tenant-a/x: invalid owned object: it names Deployment d as its controller (the slice controls what the SDK applies; drop that reference)"},
		{reason: "a duplicate", obj: configMap(sliceNS, "valid", nil),
			want: "ConfigMap v1 liqo-tenant-a/valid: invalid owned object: a duplicate in the set"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := newFakeEnv(t)
			ctx := context.Background()
			rs := slice("s1", "uid-1")
			if _, err := e.a.Apply(ctx, rs, []client.Object{configMap(sliceNS, "old", nil)}); err != nil {
				t.Fatal(err)
			}
			r, err := e.a.Apply(ctx, rs, []client.Object{configMap(sliceNS, "valid", nil), tc.obj})
			if !errors.Is(err, owned.ErrInvalid) || errors.Is(err, owned.ErrNotOurs) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
			if len(r.Applied) != 1 || r.Applied[0].Name != "valid" {
				t.Errorf("Applied %v, want the valid object alone", r.Applied)
			}
			if len(r.Pruned) != 0 || !exists(t, e.c, configMap(sliceNS, "old", nil)) {
				t.Errorf("pruned %v after a refusal, want nothing", r.Pruned)
			}
		})
	}
}

// An object that exists but is not this slice's is refused with ErrNotOurs
// and left as it was; the rest of the set is applied and nothing pruned.
func TestApplyRefusesObjectsNotOurs(t *testing.T) {
	existing := func(reason string, labels map[string]string, owners ...metav1.OwnerReference) client.Object {
		cm := configMap(sliceNS, "taken", map[string]string{"owner": reason})
		cm.Labels, cm.OwnerReferences = labels, owners
		return cm
	}
	ofSlice2 := map[string]string{owned.LabelClass: class, owned.LabelSliceNamespace: sliceNS, owned.LabelSliceName: "s2", owned.LabelSliceUID: "uid-2"}
	ofSlice1 := map[string]string{owned.LabelClass: class, owned.LabelSliceNamespace: sliceNS, owned.LabelSliceName: "s1", owned.LabelSliceUID: "uid-1"}
	cases := []struct {
		reason   string
		existing client.Object
		want     string
	}{
		{reason: "made by someone else", existing: existing("someone", nil),
			want: "ConfigMap v1 liqo-tenant-a/taken: exists and is not ours: not taken over: it has no sliceclass.io/class label (made by someone else)"},
		{reason: "another class's", existing: existing("silver", map[string]string{owned.LabelClass: "silver", owned.LabelSliceUID: "uid-1"}),
			want: `ConfigMap v1 liqo-tenant-a/taken: exists and is not ours: not taken over: it belongs to class "silver"`},
		{reason: "another slice's", existing: existing("s2", ofSlice2),
			want: "ConfigMap v1 liqo-tenant-a/taken: exists and is not ours: not taken over: it belongs to slice liqo-tenant-a/s2 (uid uid-2)"},
		{reason: "labelled ours but controlled by another", existing: existing("deployment", ofSlice1,
			metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d-uid", Controller: ptr.To(true)}),
			want: "ConfigMap v1 liqo-tenant-a/taken: exists and is not ours: not taken over: it is controlled by Deployment d"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := newFakeEnv(t, tc.existing)
			ctx := context.Background()
			rs := slice("s1", "uid-1")
			before := tc.existing.DeepCopyObject().(client.Object)
			exists(t, e.c, before)

			r, err := e.a.Apply(ctx, rs, []client.Object{configMap(sliceNS, "mine", nil), configMap(sliceNS, "taken", map[string]string{"owner": "s1"})})
			if !errors.Is(err, owned.ErrNotOurs) {
				t.Fatalf("error %v, want ErrNotOurs", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
			if len(r.Failed) != 1 || !errors.Is(r.Failed[0], owned.ErrNotOurs) || r.Failed[0].Ref.Name != "taken" {
				t.Errorf("Failed %v, want taken refused", r.Failed)
			}
			after := before.DeepCopyObject().(client.Object)
			exists(t, e.c, after)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("the existing object changed: -before +after:\n%s", diff)
			}
			if len(r.Pruned) != 0 {
				t.Errorf("Pruned %v, want nothing after a refusal", r.Pruned)
			}
		})
	}
}
