package testkit

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// Namespace creates the namespace name on cp (an existing one is fine) and
// returns its name: each test of a suite sharing a control plane works in
// namespaces of its own.
func Namespace(t testing.TB, cp *controlplane.ControlPlane, name string) string {
	t.Helper()
	require.NoError(t, cp.CreateNamespace(context.Background(), name))
	return name
}

// SkipWithoutControlPlane skips a test that starts a control plane through
// a program of its own (the demo, dev-controlplane) where
// controlplane.Start would skip: under -short, or without envtest binaries;
// with SLICECLASS_REQUIRE_ENVTEST set, missing binaries fail the test.
func SkipWithoutControlPlane(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane: not under -short")
	}
	if _, err := controlplane.AssetsDir(); err != nil {
		if errors.Is(err, controlplane.ErrNoAssets) && os.Getenv(controlplane.RequireEnv) == "" {
			t.Skipf("controlplane: %v", err)
		}
		t.Fatalf("controlplane: %v", err)
	}
}
