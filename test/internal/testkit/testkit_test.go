package testkit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

func TestNamespace(t *testing.T) {
	cp.Require(t)
	assert.Equal(t, "testkit-ns", testkit.Namespace(t, cp, "testkit-ns"))
	assert.Equal(t, "testkit-ns", testkit.Namespace(t, cp, "testkit-ns"), "an existing namespace is fine")
}
