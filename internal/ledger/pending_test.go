package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// With its re-checks held, a ledger tells a waiter what blocks it now
// exactly when RunPendingRefresh runs the re-check a change asked for,
// and a second call finds none pending.
func TestHeldRecheckRunsOnRequest(t *testing.T) {
	l, w := newLedgerOpts(t, "shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("14")},
		ledger.Options{ConsumerLimit: cpu("8")})
	t.Cleanup(l.HoldRefreshes())
	holdAs(l, "acme-1", "acme", cpu("5"))
	holdAs(l, "globex-1", "globex", cpu("8"))
	r := refused(t, []*ledger.Ledger{l}, request("acme-2", "acme", at(3), cpu("4")))
	require.Equal(t, ledger.ReasonExhausted, r.Reason)
	w.take()
	assert.False(t, l.RunPendingRefresh(), "nothing changed since the waiter was told")

	l.ForgetSlice(key("globex-1"), uid("globex-1"))
	assert.NotContains(t, w.take(), "acme-2", "the re-check is held: no timer woke the waiter")
	assert.True(t, l.RunPendingRefresh(), "the deletion asked for a re-check")
	assert.Contains(t, w.take(), "acme-2", "its consumer limit blocks it now: it is told")
	assert.False(t, l.RunPendingRefresh(), "run once")
}
