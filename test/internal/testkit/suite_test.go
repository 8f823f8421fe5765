package testkit_test

import (
	"os"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane of the package's tests.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplane.RunSuite(m, &cp))
}
