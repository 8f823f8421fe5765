package slicetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// recordingTB captures failures instead of failing the real test.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestAssertIdempotentCatchesAFlipFlop(t *testing.T) {
	n := 0
	flip := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		n++
		if n%2 == 0 {
			conditions.Deny(rs, "Even", "")
		} else {
			conditions.Accept(rs, "Odd", "")
		}
		return ctrl.Result{}, nil
	})
	slice := slicetest.NewSlice("s", slicetest.WithClass("gold"))
	rec := &recordingTB{TB: t}
	h := slicetest.New(rec, "gold", flip, slicetest.WithObjects(slice))
	h.AssertIdempotent(slice)
	if len(rec.errors) != 2 {
		t.Errorf("a handler that changes its answer must fail both checks (writes and decision), got %q", rec.errors)
	}

	steady := slicetest.New(rec, "gold", handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Accept(rs, "Same", "")
		return ctrl.Result{}, nil
	}), slicetest.WithObjects(slice))
	rec.errors = nil
	steady.AssertIdempotent(slice)
	if len(rec.errors) != 0 {
		t.Errorf("a steady handler must pass, got %q", rec.errors)
	}
}

func TestStatusWriteErrorsAreConsumedInOrder(t *testing.T) {
	boom := errors.New("boom")
	slice := slicetest.NewSlice("s", slicetest.WithClass("gold"))
	accept := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	h := slicetest.New(t, "gold", accept, slicetest.WithObjects(slice), slicetest.WithStatusWriteErrors(boom, nil))
	if res := h.Reconcile(slice); !errors.Is(res.Err, boom) || res.Decision != "" {
		t.Errorf("first write must fail with the injected error: %v, decision %q", res.Err, res.Decision)
	}
	if res := h.Reconcile(slice); res.Err != nil || res.Decision != conditions.Accepted {
		t.Errorf("a nil entry lets the write through: %v, decision %q", res.Err, res.Decision)
	}
	if got := len(h.Writes()); got != 2 {
		t.Errorf("both attempts are recorded as writes: got %d", got)
	}
	if got := len(h.Events()); got != 1 {
		t.Errorf("one decision event: got %d", got)
	}
}

func TestBuilders(t *testing.T) {
	s := slicetest.NewSlice("s", slicetest.WithClass("gold"), slicetest.WithConsumer("bob"), slicetest.WithRequest("cpu", "2"),
		slicetest.Decided(conditions.Denied, "Full"))
	if s.Labels["liqo.io/originID"] != "bob" || string(*s.Spec.ConsumerClusterID) != "bob" || !conditions.IsAuthenticated(s) ||
		!conditions.IsDenied(s) || s.Spec.Resources.Cpu().Value() != 2 {
		t.Errorf("builder options not applied: %+v", s)
	}
	u := slicetest.NewSlice("u", slicetest.Unauthenticated(), slicetest.NotReplicated())
	if conditions.IsAuthenticated(u) || u.Status.AuthParams != nil || len(u.Labels) != 0 {
		t.Errorf("Unauthenticated/NotReplicated not applied: %+v", u)
	}
}
