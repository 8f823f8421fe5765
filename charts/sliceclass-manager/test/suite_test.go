package charttest

import (
	"os"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane the tests apply the rendered chart to. Each test
// installs into namespaces of its own.
var cp *controlplane.ControlPlane

// TestMain starts the shared control plane (controlplane.RunSuite): the
// tests on it begin with cp.Require(t), which skips them under -short or
// without envtest binaries, unless SLICECLASS_REQUIRE_ENVTEST is set (as
// `make chart-test` does), when missing binaries fail the package.
func TestMain(m *testing.M) { os.Exit(controlplane.RunSuite(m, &cp)) }
