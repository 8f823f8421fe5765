package owned_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/owned"
)

// An object whose content is as last applied, and which nobody touched
// since, is not applied again; one whose content changed, or that someone
// changed or deleted by hand, is.
func TestApplySkipsWhatIsAsLastApplied(t *testing.T) {
	ctx := context.Background()
	rs := slice("s1", "uid-1")
	grant := func(cpu string) client.Object { return configMap(sliceNS, "grant", map[string]string{"cpu": cpu}) }
	record := func() client.Object { return configMap(accounting, "s1", map[string]string{"slice": "s1"}) }
	pc := func() client.Object { return priorityClass("consumer-a", 1000) }
	set := func(cpu string) []client.Object { return []client.Object{grant(cpu), record(), pc()} }
	names := func(objs ...client.Object) []owned.Ref { return refs(t, newScheme(t), objs...) }

	cases := []struct {
		reason string
		// before runs between the first Apply (of set("4")) and the second.
		before        func(t *testing.T, e *fakeEnv)
		second        []client.Object
		wantApplied   []owned.Ref
		wantUnchanged []owned.Ref
	}{
		{
			reason:        "the same set again: nothing is sent",
			second:        set("4"),
			wantUnchanged: names(grant("4"), record(), pc()),
		},
		{
			reason:        "one object's content changed: only it is sent",
			second:        set("8"),
			wantApplied:   names(grant("8")),
			wantUnchanged: names(record(), pc()),
		},
		{
			reason: "someone changed an object by hand: it is sent again",
			before: func(t *testing.T, e *fakeEnv) {
				cm := configMap(sliceNS, "grant", nil)
				exists(t, e.c, cm)
				cm.Data["cpu"] = "64"
				if err := e.c.Update(ctx, cm); err != nil {
					t.Fatal(err)
				}
			},
			second:        set("4"),
			wantApplied:   names(grant("4")),
			wantUnchanged: names(record(), pc()),
		},
		{
			reason: "someone deleted an object by hand: it is sent again",
			before: func(t *testing.T, e *fakeEnv) {
				if err := e.c.Delete(ctx, priorityClass("consumer-a", 0)); err != nil {
					t.Fatal(err)
				}
			},
			second:        set("4"),
			wantApplied:   names(pc()),
			wantUnchanged: names(grant("4"), record()),
		},
		{
			reason: "the slice's objects were removed: everything is sent again",
			before: func(t *testing.T, e *fakeEnv) {
				if _, err := e.a.Remove(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}, rs.UID); err != nil {
					t.Fatal(err)
				}
			},
			second:      set("4"),
			wantApplied: names(grant("4"), record(), pc()),
		},
		{
			reason: "another Applier (a restart) remembers nothing: everything is sent again",
			before: func(t *testing.T, e *fakeEnv) {
				e.a = e.applier(t, owned.WithTypes(&corev1.ConfigMap{}))
			},
			second:      set("4"),
			wantApplied: names(grant("4"), record(), pc()),
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := newFakeEnv(t)
			if _, err := e.a.Apply(ctx, rs, set("4")); err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				tc.before(t, e)
			}
			e.calls.take()
			r, err := e.a.Apply(ctx, rs, tc.second)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantApplied, r.Applied); diff != "" {
				t.Errorf("Applied -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnchanged, r.Unchanged); diff != "" {
				t.Errorf("Unchanged -want +got:\n%s", diff)
			}
			if got, want := e.calls.take()["apply"], len(tc.wantApplied); got != want {
				t.Errorf("%d applies sent, want %d", got, want)
			}
			for _, obj := range tc.second {
				want := obj.DeepCopyObject().(client.Object)
				if !exists(t, e.c, obj) {
					t.Fatalf("%s is missing after the second Apply", obj.GetName())
				}
				if cm, ok := want.(*corev1.ConfigMap); ok && !cmp.Equal(cm.Data, obj.(*corev1.ConfigMap).Data) {
					t.Errorf("%s/%s holds %v, want %v", obj.GetNamespace(), obj.GetName(), obj.(*corev1.ConfigMap).Data, cm.Data)
				}
			}
		})
	}
}

// An apply that failed is sent again on the next Apply, even though the
// content is the same.
func TestApplySendsAgainWhatFailed(t *testing.T) {
	e := newFakeEnv(t)
	ctx := context.Background()
	rs := slice("s1", "uid-1")
	set := []client.Object{configMap(sliceNS, "a", nil), configMap(sliceNS, "b", nil)}
	if _, err := e.a.Apply(ctx, rs, set); err != nil {
		t.Fatal(err)
	}
	changed := []client.Object{configMap(sliceNS, "a", nil), configMap(sliceNS, "b", map[string]string{"v": "2"})}
	boom := errors.New("boom")
	e.calls.failApplyOf("b", boom)
	if _, err := e.a.Apply(ctx, rs, changed); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the apply's", err)
	}
	e.calls.failApplyOf("b", nil)
	e.calls.take()
	r, err := e.a.Apply(ctx, rs, changed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs(t, e.c.Scheme(), changed[1]), r.Applied); diff != "" {
		t.Errorf("Applied after a failure -want +got:\n%s", diff)
	}
	if got := e.calls.take()["apply"]; got != 1 {
		t.Errorf("%d applies, want the failed object's alone", got)
	}
}

// The memory holds only the slices' current sets: it shrinks with the set,
// and a slice removed (by UID, or by name when the UID is unknown) or swept
// leaves nothing behind.
func TestAppliedMemoryDoesNotOutliveTheSets(t *testing.T) {
	e := newFakeEnv(t)
	ctx := context.Background()
	s1, s2, s3 := slice("s1", "uid-1"), slice("s2", "uid-2"), slice("s3", "uid-3")
	for _, rs := range []struct {
		name string
		n    int
	}{{"s1", 3}, {"s2", 2}, {"s3", 1}} {
		var set []client.Object
		for i := range rs.n {
			set = append(set, configMap(sliceNS, rs.name+"-"+string(rune('a'+i)), nil))
		}
		if _, err := e.a.Apply(ctx, slice(rs.name, types.UID("uid-"+rs.name[1:])), set); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		reason string
		do     func() error
		want   int
	}{
		{"three slices' sets of 3, 2 and 1 objects", func() error { return nil }, 6},
		{"s1's set shrinks to one object", func() error {
			_, err := e.a.Apply(ctx, s1, []client.Object{configMap(sliceNS, "s1-a", nil)})
			return err
		}, 4},
		{"s2 is removed by UID", func() error {
			_, err := e.a.Remove(ctx, types.NamespacedName{Namespace: s2.Namespace, Name: s2.Name}, s2.UID)
			return err
		}, 2},
		{"s3 is removed by name (the slice is gone, its UID unknown)", func() error {
			_, err := e.a.Remove(ctx, types.NamespacedName{Namespace: s3.Namespace, Name: s3.Name}, "")
			return err
		}, 1},
		{"s1 is swept (not live)", func() error {
			_, err := e.a.Sweep(ctx, func(types.UID) bool { return false })
			return err
		}, 0},
		{"s1 applied again, then given an empty set", func() error {
			if _, err := e.a.Apply(ctx, s1, []client.Object{configMap(sliceNS, "s1-a", nil)}); err != nil {
				return err
			}
			_, err := e.a.Apply(ctx, s1, nil)
			return err
		}, 0},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.reason, err)
		}
		if got := owned.Remembered(e.a); got != st.want {
			t.Errorf("%s: %d objects remembered, want %d", st.reason, got, st.want)
		}
	}
}
