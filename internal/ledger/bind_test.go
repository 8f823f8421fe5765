package ledger_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// A budget is bound to one owner at a time: the parts are built once for
// it, another owner is refused until the first lets go, and a failed build
// binds nothing.
func TestBindOneOwnerAtATime(t *testing.T) {
	l, _ := newLedger(t, res("4", "8Gi"))
	type mgr struct{ name string }
	first, second := &mgr{"first"}, &mgr{"second"}
	builds := 0
	build := func() (any, error) { builds++; return builds, nil }

	_, err := l.Bind(first, func() (any, error) { return nil, errors.New("no cache") })
	require.Error(t, err)
	got, err := l.Bind(first, build)
	require.NoError(t, err, "a failed build bound nothing")
	assert.Equal(t, 1, got)
	got, err = l.Bind(first, build)
	require.NoError(t, err)
	assert.Equal(t, 1, got, "the same owner finds the parts built once")

	_, err = l.Bind(second, build)
	require.ErrorIs(t, err, ledger.ErrBoundElsewhere)
	assert.ErrorContains(t, err, `budget "pool"`)

	l.Unbind(second)
	_, err = l.Bind(second, build)
	require.ErrorIs(t, err, ledger.ErrBoundElsewhere, "only the owner lets go")
	l.Unbind(first)
	got, err = l.Bind(second, build)
	require.NoError(t, err, "once the first owner stopped, another may bind it")
	assert.Equal(t, 2, got)
}
