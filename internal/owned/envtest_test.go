package owned_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/owned"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// apiEnv is one class's Applier on a real API server, with its own tenant
// and accounting namespaces, so that tests sharing the control plane do not
// see each other's objects (PriorityClasses are named after the slice,
// itself named after the class).
type apiEnv struct {
	cp         *controlplane.ControlPlane
	class      string
	tenant     string
	accounting string
	a          *owned.Applier
	calls      *calls
}

func newAPIEnv(t *testing.T, cp *controlplane.ControlPlane, class string) *apiEnv {
	t.Helper()
	ctx := context.Background()
	e := &apiEnv{cp: cp, class: class, tenant: "tenant-" + class, accounting: "acct-" + class}
	for _, ns := range []string{e.tenant, e.accounting} {
		if err := cp.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var cc client.WithWatch
	cc, e.calls = counted(c)
	e.a = e.applier(t, cc)
	return e
}

// applier is a new Applier of the class reading and writing through c (a
// restart, or another user), knowing ConfigMaps and PriorityClasses.
func (e *apiEnv) applier(t *testing.T, c client.Client) *owned.Applier {
	t.Helper()
	a, err := owned.New(c, c, e.cp.Scheme, e.class, owned.WithTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// slice creates a ResourceSlice of the class in the tenant namespace.
func (e *apiEnv) slice(t *testing.T, name string) *authv1beta1.ResourceSlice {
	t.Helper()
	rs := slicetest.NewSlice(name, slicetest.WithNamespace(e.tenant), slicetest.WithClass(e.class))
	if err := e.cp.Client.Create(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// set is a slice's set: a ConfigMap in its namespace (its grant), one in
// the accounting namespace, and a PriorityClass named after the slice.
func (e *apiEnv) set(rs *authv1beta1.ResourceSlice) []client.Object {
	return []client.Object{
		configMap(rs.Namespace, rs.Name, map[string]string{"cpu": "4"}),
		configMap(e.accounting, rs.Name, map[string]string{"slice": rs.Namespace + "/" + rs.Name}),
		priorityClass(rs.Name, 1000),
	}
}

// TestOnAPIServer proves on kube-apiserver what the fake client cannot:
// server-side apply's real field ownership and validation, ownerReferences
// accepted by the server, deletes with UID preconditions, metadata-only
// lists by label across namespaces, and the RBAC verbs the engine needs.
func TestOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)

	// Objects exist with the labels; only the ConfigMap in the slice's
	// namespace has an ownerReference; nothing has a finalizer.
	t.Run("apply", func(t *testing.T) {
		e := newAPIEnv(t, cp, "apply")
		ctx := context.Background()
		rs := e.slice(t, "apply-s1")
		if _, err := e.a.Apply(ctx, rs, e.set(rs)); err != nil {
			t.Fatal(err)
		}
		wantOwner := []metav1.OwnerReference{{
			APIVersion: "authentication.liqo.io/v1beta1", Kind: "ResourceSlice", Name: rs.Name, UID: rs.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
		}}
		for i, obj := range e.set(rs) {
			if !exists(t, cp.Client, obj) {
				t.Fatalf("%s not created", obj.GetName())
			}
			l := obj.GetLabels()
			if l[owned.LabelClass] != e.class || l[owned.LabelSliceUID] != string(rs.UID) ||
				l[owned.LabelSliceNamespace] != rs.Namespace || l[owned.LabelSliceName] != rs.Name {
				t.Errorf("%s/%s: labels %v", obj.GetNamespace(), obj.GetName(), l)
			}
			var want []metav1.OwnerReference
			if i == 0 {
				want = wantOwner
			}
			if diff := cmp.Diff(want, obj.GetOwnerReferences()); diff != "" {
				t.Errorf("%s/%s: ownerReferences -want +got:\n%s", obj.GetNamespace(), obj.GetName(), diff)
			}
			if len(obj.GetFinalizers()) > 0 {
				t.Errorf("%s/%s: finalizers %v", obj.GetNamespace(), obj.GetName(), obj.GetFinalizers())
			}
			var managers []string
			for _, mf := range obj.GetManagedFields() {
				managers = append(managers, mf.Manager+"/"+string(mf.Operation))
			}
			if diff := cmp.Diff([]string{"sliceclass-apply/Apply"}, managers); diff != "" {
				t.Errorf("%s/%s: field managers -want +got:\n%s", obj.GetNamespace(), obj.GetName(), diff)
			}
		}
		var got authv1beta1.ResourceSlice
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Finalizers) > 0 {
			t.Errorf("the slice has finalizers %v", got.Finalizers)
		}
	})

	// Someone else changes a field of ours: the next Apply takes it back
	// (ForceOwnership on our own object), applying that object alone: it
	// reads with one list per kind and no get, and the objects nobody
	// touched are not sent again.
	t.Run("reapply", func(t *testing.T) {
		e := newAPIEnv(t, cp, "reapply")
		ctx := context.Background()
		rs := e.slice(t, "reapply-s1")
		if _, err := e.a.Apply(ctx, rs, e.set(rs)); err != nil {
			t.Fatal(err)
		}
		cm := configMap(rs.Namespace, rs.Name, nil)
		exists(t, cp.Client, cm)
		cm.Data["cpu"] = "64"
		if err := cp.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		e.calls.take()
		if _, err := e.a.Apply(ctx, rs, e.set(rs)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]int{"list": 2, "apply": 1}, e.calls.take()); diff != "" {
			t.Errorf("steady Apply, API calls -want +got:\n%s", diff)
		}
		exists(t, cp.Client, cm)
		if cm.Data["cpu"] != "4" {
			t.Errorf("cpu = %q after Apply, want 4 taken back", cm.Data["cpu"])
		}
	})

	// A set that shrinks deletes only the object it dropped.
	t.Run("shrink", func(t *testing.T) {
		e := newAPIEnv(t, cp, "shrink")
		ctx := context.Background()
		rs := e.slice(t, "shrink-s1")
		set := e.set(rs)
		if _, err := e.a.Apply(ctx, rs, set); err != nil {
			t.Fatal(err)
		}
		before := configMap(rs.Namespace, rs.Name, nil)
		exists(t, cp.Client, before)
		r, err := e.a.Apply(ctx, rs, []client.Object{set[0], set[2]})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(refs(t, cp.Scheme, set[1]), r.Pruned); diff != "" {
			t.Errorf("Pruned -want +got:\n%s", diff)
		}
		if exists(t, cp.Client, configMap(e.accounting, rs.Name, nil)) {
			t.Error("the dropped ConfigMap still exists")
		}
		after := configMap(rs.Namespace, rs.Name, nil)
		if !exists(t, cp.Client, after) || after.UID != before.UID || !exists(t, cp.Client, priorityClass(rs.Name, 0)) {
			t.Error("an object still in the set was deleted or recreated")
		}
	})

	// An object the API server rejects fails its apply; the rest is
	// applied, and nothing is pruned.
	t.Run("invalid object prunes nothing", func(t *testing.T) {
		e := newAPIEnv(t, cp, "invalid")
		ctx := context.Background()
		rs := e.slice(t, "invalid-s1")
		set := e.set(rs)
		if _, err := e.a.Apply(ctx, rs, set); err != nil {
			t.Fatal(err)
		}
		bad := configMap(rs.Namespace, "bad", map[string]string{"not a key!": "x"})
		r, err := e.a.Apply(ctx, rs, []client.Object{set[0], bad})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("error %v, want the API server's Invalid", err)
		}
		if len(r.Applied)+len(r.Unchanged) != 1 || len(r.Pruned) != 0 {
			t.Errorf("report %+v, want the grant in place and nothing pruned", r)
		}
		if got := existing(t, cp.Client, set); len(got) != 3 {
			t.Errorf("only %v left after a failed apply, want all 3", got)
		}
	})

	// Remove deletes the slice's objects everywhere: its namespace, another
	// namespace, cluster scope.
	t.Run("remove", func(t *testing.T) {
		e := newAPIEnv(t, cp, "remove")
		ctx := context.Background()
		rs := e.slice(t, "remove-s1")
		if _, err := e.a.Apply(ctx, rs, e.set(rs)); err != nil {
			t.Fatal(err)
		}
		r, err := e.a.Remove(ctx, client.ObjectKeyFromObject(rs), rs.UID)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Deleted) != 3 {
			t.Errorf("Deleted %v, want 3", r.Deleted)
		}
		if got := existing(t, cp.Client, e.set(rs)); len(got) > 0 {
			t.Errorf("left %v", got)
		}
	})

	// After a restart, Sweep deletes the cluster-scoped and other-namespace
	// objects of a slice that is not live, and keeps a live slice's.
	t.Run("sweep", func(t *testing.T) {
		e := newAPIEnv(t, cp, "sweep")
		ctx := context.Background()
		gone, live := e.slice(t, "sweep-gone"), e.slice(t, "sweep-live")
		for _, rs := range []*authv1beta1.ResourceSlice{gone, live} {
			if _, err := e.a.Apply(ctx, rs, e.set(rs)); err != nil {
				t.Fatal(err)
			}
		}
		if err := cp.Client.Delete(ctx, gone); err != nil {
			t.Fatal(err)
		}
		restarted := e.applier(t, cp.Client)
		r, err := restarted.Sweep(ctx, func(uid types.UID) bool { return uid == live.UID })
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Deleted) != 3 {
			t.Errorf("Deleted %v, want the gone slice's 3 objects", r.Deleted)
		}
		if got := existing(t, cp.Client, e.set(gone)); len(got) > 0 {
			t.Errorf("left %v of the gone slice", got)
		}
		if got := existing(t, cp.Client, e.set(live)); len(got) != 3 {
			t.Errorf("of the live slice's objects only %v are left", got)
		}
	})

	// An object that exists and is not ours is refused and left untouched.
	t.Run("foreign object", func(t *testing.T) {
		e := newAPIEnv(t, cp, "foreign")
		ctx := context.Background()
		rs := e.slice(t, "foreign-s1")
		theirs := configMap(e.accounting, rs.Name, map[string]string{"theirs": "yes"})
		if err := cp.Client.Create(ctx, theirs); err != nil {
			t.Fatal(err)
		}
		r, err := e.a.Apply(ctx, rs, e.set(rs))
		if !errors.Is(err, owned.ErrNotOurs) {
			t.Fatalf("error %v, want ErrNotOurs", err)
		}
		if len(r.Applied) != 2 || len(r.Failed) != 1 {
			t.Errorf("report %+v, want 2 applied and the accounting ConfigMap refused", r)
		}
		after := configMap(e.accounting, rs.Name, nil)
		exists(t, cp.Client, after)
		if after.ResourceVersion != theirs.ResourceVersion || len(after.Labels) > 0 {
			t.Errorf("the foreign object changed: resourceVersion %s→%s, labels %v", theirs.ResourceVersion, after.ResourceVersion, after.Labels)
		}
	})

	// Why a restart applies every object once (issue 29): an update that
	// only removes one of our fields leaves no trace the object's metadata
	// shows but our own managed-fields entry losing the field. The remover
	// gets no entry and no timestamp moves, and labels and annotations
	// (where a sum of our content would be kept) are as we applied them; a
	// restarted Applier that skipped an object whose metadata looks as it
	// left it would leave the field removed. The restarted Applier applies
	// it, and the field is back.
	t.Run("restart restores a field removed by another writer", func(t *testing.T) {
		e := newAPIEnv(t, cp, "removed")
		ctx := context.Background()
		rs := e.slice(t, "removed-s1")
		grant := func() *corev1.ConfigMap {
			return configMap(rs.Namespace, rs.Name, map[string]string{"cpu": "4", "memory": "8Gi"})
		}
		if _, err := e.a.Apply(ctx, rs, []client.Object{grant()}); err != nil {
			t.Fatal(err)
		}
		applied := grant()
		exists(t, cp.Client, applied)
		edited := applied.DeepCopy()
		delete(edited.Data, "memory")
		if err := cp.Client.Update(ctx, edited, client.FieldOwner("editor")); err != nil {
			t.Fatal(err)
		}
		var managers []string
		for _, mf := range edited.ManagedFields {
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
		}
		if diff := cmp.Diff([]string{"sliceclass-removed/Apply"}, managers); diff != "" {
			t.Errorf("managers after the removal -want +got:\n%s", diff)
		}
		if !cmp.Equal(applied.Labels, edited.Labels) || !cmp.Equal(applied.Annotations, edited.Annotations) ||
			!applied.ManagedFields[0].Time.Equal(edited.ManagedFields[0].Time) {
			t.Errorf("the removal changed the labels, annotations or our entry's time: %+v", edited.ObjectMeta)
		}

		restarted := e.applier(t, cp.Client)
		r, err := restarted.Apply(ctx, rs, []client.Object{grant()})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Applied) != 1 || len(r.Unchanged) != 0 {
			t.Errorf("the restarted Applier applied %v and skipped %v, want the ConfigMap applied", r.Applied, r.Unchanged)
		}
		after := grant()
		exists(t, cp.Client, after)
		if diff := cmp.Diff(grant().Data, after.Data); diff != "" {
			t.Errorf("data after the restart's apply -want +got:\n%s", diff)
		}
	})

	t.Run("least privilege", func(t *testing.T) { testLeastPrivilege(t, cp) })
}
