package owned_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sliceclass/sliceclass/internal/owned"
)

// New fails fast, saying what is wrong, on a setup that cannot work.
func TestNew(t *testing.T) {
	s := newScheme(t)
	c := fake.NewClientBuilder().WithScheme(s).Build()
	cases := []struct {
		reason string
		c      client.Client
		reader client.Reader
		scheme *runtime.Scheme
		class  string
		opts   []owned.Option
		want   string // a part of the error; "" for none
	}{
		{reason: "a valid setup", c: c, reader: c, scheme: s, class: class, opts: []owned.Option{owned.WithTypes(&corev1.ConfigMap{})}},
		{reason: "no client", reader: c, scheme: s, class: class, want: "nil client"},
		{reason: "no reader", c: c, scheme: s, class: class, want: "nil reader"},
		{reason: "no scheme", c: c, reader: c, class: class, want: "nil scheme"},
		{reason: "an empty class", c: c, reader: c, scheme: s, want: `class "" is not a non-empty label value`},
		{reason: "a class that is not a label value", c: c, reader: c, scheme: s, class: "gold/premium", want: `class "gold/premium" is not a non-empty label value`},
		{reason: "a type missing from the scheme", c: c, reader: c, scheme: s, class: class,
			opts: []owned.Option{owned.WithTypes(&unknownKind{})}, want: "WithTypes: invalid owned object: Go type *owned_test.unknownKind is not in the scheme"},
		{reason: "a nil type", c: c, reader: c, scheme: s, class: class, opts: []owned.Option{owned.WithTypes(nil)}, want: "WithTypes: nil object"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := owned.New(tc.c, tc.reader, tc.scheme, tc.class, tc.opts...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A nil slice, or one without a UID (not read from the API server), is an
// error before anything is read.
func TestApplyNeedsASliceFromTheServer(t *testing.T) {
	e := newFakeEnv(t)
	for _, rs := range []*authv1beta1.ResourceSlice{nil, slice("s1", "")} {
		if _, err := e.a.Apply(context.Background(), rs, nil); err == nil {
			t.Errorf("Apply(%v) succeeded, want an error", rs)
		}
	}
	if n := e.calls.take(); len(n) > 0 {
		t.Errorf("API calls %v, want none", n)
	}
}

// Several workers apply, prune and remove different slices' sets at once
// through one Applier (run with -race).
func TestConcurrentSlices(t *testing.T) {
	e := newFakeEnv(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			rs := slice(fmt.Sprintf("s%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
			set := setOf(rs)
			for _, step := range [][]client.Object{set, set[:1], set} {
				if _, err := e.a.Apply(ctx, rs, step); err != nil {
					errs <- err
					return
				}
			}
			if i%2 == 0 {
				if _, err := e.a.Remove(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}, rs.UID); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 8 {
		want := 3
		if i%2 == 0 {
			want = 0
		}
		if got := existing(t, e.c, setOf(slice(fmt.Sprintf("s%d", i), ""))); len(got) != want {
			t.Errorf("slice s%d has %v, want %d objects", i, got, want)
		}
	}
}
