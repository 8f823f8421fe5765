package testkit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// Namespace creates the namespace name on cp (an existing one is fine) and
// returns its name: each test of a suite sharing a control plane works in
// namespaces of its own.
func Namespace(t testing.TB, cp *controlplane.ControlPlane, name string) string {
	t.Helper()
	require.NoError(t, cp.CreateNamespace(context.Background(), name))
	return name
}

// SkipWithoutControlPlane is envkit.SkipWithoutControlPlane.
func SkipWithoutControlPlane(t testing.TB) {
	t.Helper()
	envkit.SkipWithoutControlPlane(t)
}
