package testkit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

func TestNamespace(t *testing.T) {
	cp.Require(t)
	assert.Equal(t, "testkit-ns", testkit.Namespace(t, cp, "testkit-ns"))
	assert.Equal(t, "testkit-ns", testkit.Namespace(t, cp, "testkit-ns"), "an existing namespace is fine")
}

// EventuallyScaled ends at the first check at which the condition holds.
func TestEventuallyScaledReturnsWhenItHolds(t *testing.T) {
	calls := 0
	testkit.EventuallyScaled(t, testkit.Every(time.Millisecond), 5, "the third check", func() bool {
		calls++
		return calls == 3
	})
	assert.Equal(t, 3, calls)
}
