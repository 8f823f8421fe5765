package cohorts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// A manager's cohorts are one object for all its budgets, another
// manager's are others, and they go when the manager stops: nothing is
// kept for a stopped manager, and it is given none again.
func TestCohortsAreTheManagersUntilItStops(t *testing.T) {
	first, second := envkit.UnreachableManager(t), envkit.UnreachableManager(t)
	a, err := Of(first)
	require.NoError(t, err)
	again, err := Of(first)
	require.NoError(t, err)
	assert.Same(t, a, again, "one manager, one set of cohorts")
	b, err := Of(second)
	require.NoError(t, err)
	assert.NotSame(t, a, b, "another manager, other cohorts")
	assert.Empty(t, Members(first, "tiers"), "no budget joined the cohort")
	before := size()

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
	assert.Equal(t, before-1, size(), "the stopped manager's cohorts are gone")
	_, err = Of(first)
	assert.Error(t, err, "a stopped manager gets no cohorts it could never let go")
	b2, err := Of(second)
	require.NoError(t, err)
	assert.Same(t, b, b2, "the other manager keeps its own")
}
