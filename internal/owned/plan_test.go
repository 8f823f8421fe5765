package owned_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/owned"
)

// Plan reports what Apply then does, with the same refusals, and writes
// nothing.
func TestPlanWritesNothing(t *testing.T) {
	e := newFakeEnv(t, configMap(sliceNS, "foreign", nil))
	ctx := context.Background()
	rs := slice("s1", "uid-1")
	if _, err := e.a.Apply(ctx, rs, []client.Object{configMap(sliceNS, "a", nil), configMap(sliceNS, "old", nil)}); err != nil {
		t.Fatal(err)
	}

	refused := []client.Object{configMap(sliceNS, "a", map[string]string{"v": "2"}), configMap(sliceNS, "foreign", nil)}
	e.calls.take()
	r, err := e.a.Plan(ctx, rs, refused)
	if !errors.Is(err, owned.ErrNotOurs) {
		t.Errorf("Plan with a foreign object: error %v, want ErrNotOurs", err)
	}
	if len(r.Applied) != 1 || len(r.Pruned) != 0 || len(r.Failed) != 1 {
		t.Errorf("Plan with a foreign object: %+v, want a applied, foreign refused, nothing pruned", r)
	}

	set := []client.Object{configMap(sliceNS, "a", map[string]string{"v": "2"}), configMap(sliceNS, "b", nil)}
	e.calls.take()
	planned, err := e.a.Plan(ctx, rs, set)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"list": 1, "get": 1}, e.calls.take()); diff != "" {
		t.Errorf("Plan's API calls -want +got (reads only):\n%s", diff)
	}
	if !exists(t, e.c, configMap(sliceNS, "old", nil)) || exists(t, e.c, configMap(sliceNS, "b", nil)) {
		t.Error("Plan changed the cluster")
	}
	applied, err := e.a.Apply(ctx, rs, set)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(planned, applied); diff != "" {
		t.Errorf("Plan -want, Apply +got:\n%s", diff)
	}
	if len(applied.Pruned) != 1 || applied.Pruned[0].Name != "old" {
		t.Errorf("Pruned %v, want old", applied.Pruned)
	}
}
