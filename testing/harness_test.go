package slicetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// grant accepts every slice.
var grant = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
})

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
	assert.Len(t, rec.errors, 2, "a handler that changes its answer must fail both checks (writes and decision)")

	steady := slicetest.New(rec, "gold", grant, slicetest.WithObjects(slice))
	rec.errors = nil
	steady.AssertIdempotent(slice)
	assert.Empty(t, rec.errors, "a steady handler must pass")
}

func TestStatusWriteErrorsAreConsumedInOrder(t *testing.T) {
	boom := errors.New("boom")
	slice := slicetest.NewSlice("s", slicetest.WithClass("gold"))
	h := slicetest.New(t, "gold", grant, slicetest.WithObjects(slice), slicetest.WithStatusWriteErrors(boom, nil))

	first := h.Reconcile(slice)
	assert.ErrorIs(t, first.Err, boom, "the first write fails with the injected error")
	assert.Empty(t, first.Decision)
	require.Len(t, first.Writes, 1, "the failed attempt is recorded")
	assert.ErrorIs(t, first.Writes[0].Err, boom, "the recorded write says it failed")
	assert.Empty(t, first.Events, "no decision, no event")

	second := h.Reconcile(slice)
	assert.NoError(t, second.Err, "a nil entry lets the write through")
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, second.Decision)
	require.Len(t, second.Writes, 1)
	assert.NoError(t, second.Writes[0].Err, "the API accepted the write")
	assert.Len(t, second.Events, 1, "one decision event")
}

// A conflict is a write attempted and refused: Result.Writes counts it, and
// its Err tells it from an accepted write.
func TestWriteErrTellsAConflictFromAnAcceptedWrite(t *testing.T) {
	slice := slicetest.NewSlice("s", slicetest.WithClass("gold"))
	h := slicetest.New(t, "gold", grant, slicetest.WithObjects(slice), slicetest.WithStatusWriteErrors(slicetest.Conflict()))

	refused := h.Reconcile(slice)
	require.NoError(t, refused.Err, "a conflict is requeued quietly, not returned")
	require.Len(t, refused.Writes, 1)
	w := refused.Writes[0]
	assert.True(t, apierrors.IsConflict(w.Err), "want a conflict, got %v", w.Err)
	assert.Equal(t, "patch", w.Verb)
	assert.Equal(t, "status", w.Subresource)
	assert.NotEmpty(t, w.Patch, "a refused patch still shows its body")

	accepted := h.Reconcile(slice)
	require.Len(t, accepted.Writes, 1)
	assert.NoError(t, accepted.Writes[0].Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, accepted.Decision)
}

func TestBuilders(t *testing.T) {
	s := slicetest.NewSlice("s", slicetest.WithClass("gold"), slicetest.WithConsumer("bob"), slicetest.WithRequest("cpu", "2"),
		slicetest.Decided(authv1beta1.ResourceSliceConditionDenied, "Full"))
	assert.Equal(t, "bob", s.Labels["liqo.io/originID"])
	require.NotNil(t, s.Spec.ConsumerClusterID)
	assert.Equal(t, "bob", string(*s.Spec.ConsumerClusterID))
	assert.True(t, conditions.IsAuthenticated(s), "authenticated by default")
	assert.True(t, conditions.IsDenied(s), "Decided applied")
	assert.Equal(t, int64(2), s.Spec.Resources.Cpu().Value())

	u := slicetest.NewSlice("u", slicetest.Unauthenticated(), slicetest.NotReplicated())
	assert.False(t, conditions.IsAuthenticated(u))
	assert.Nil(t, u.Status.AuthParams)
	assert.Empty(t, u.Labels)
}
