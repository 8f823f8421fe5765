package testkit_test

import (
	"os"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane of the manager tests; the waits' tests need none.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplane.RunSuite(m, &cp))
}
