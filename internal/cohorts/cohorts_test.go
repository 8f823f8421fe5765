package cohorts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

func newLedger(t *testing.T, name, cohort string) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, ledger.Options{})
	require.NoError(t, err)
	l.SetCohortName(cohort)
	return l
}

// names are the names of Members(mgr, cohort).
func names(mgr manager.Manager, cohort string) []string {
	var out []string
	for _, l := range Members(mgr, cohort) {
		out = append(out, l.Name())
	}
	return out
}

// Budgets one manager serves meet by cohort name, whoever joined them;
// another manager's budgets are apart; a budget that leaves is no member;
// and a manager's entry goes when it stops: nothing is kept for it, and
// it is given none again.
func TestCohortsAreTheManagersUntilItStops(t *testing.T) {
	first, second := envkit.UnreachableManager(t), envkit.UnreachableManager(t)
	before := size()
	spot, gold, typo := newLedger(t, "spot", "tiers"), newLedger(t, "gold", "tiers"), newLedger(t, "silver", "teirs")
	other := newLedger(t, "bronze", "tiers")
	for _, l := range []*ledger.Ledger{spot, gold, typo} {
		require.NoError(t, Join(first, l))
	}
	require.NoError(t, Join(second, other))
	assert.Equal(t, []string{"gold", "spot"}, names(first, "tiers"), "one manager's budgets naming one cohort meet")
	assert.Equal(t, "tiers", spot.Cohort())
	assert.Equal(t, []string{"silver"}, names(first, "teirs"), "a misspelt cohort is a cohort of one")
	assert.Equal(t, []string{"bronze"}, names(second, "tiers"), "another manager's cohort of the same name is its own")
	assert.Empty(t, names(first, ""), "no cohort, no members")
	assert.Equal(t, before+2, size())

	Leave(first, gold)
	assert.Equal(t, []string{"spot"}, names(first, "tiers"), "a budget no longer served leaves")
	assert.Empty(t, gold.Cohort())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Start(ctx) }()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(testwait.Timeout):
		t.Fatal("the manager did not stop")
	}
	assert.Equal(t, before+1, size(), "the stopped manager's entry is gone")
	assert.Empty(t, names(first, "tiers"))
	assert.Error(t, Join(first, gold), "a stopped manager gets no entry it could never let go")
	assert.Equal(t, []string{"bronze"}, names(second, "tiers"), "the other manager keeps its own")
}
