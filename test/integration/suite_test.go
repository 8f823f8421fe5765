package integration

import (
	"os"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane shared by the suite; each test works in its own
// namespace with its own class names, so tests do not see each other.
var cp *controlplane.ControlPlane

// TestMain starts one control plane for the suite (controlplane.RunSuite):
// every test begins with cp.Require(t), which skips it under -short or
// without envtest binaries, unless SLICECLASS_REQUIRE_ENVTEST is set (as in
// CI), when missing binaries fail the suite.
func TestMain(m *testing.M) {
	os.Exit(controlplane.RunSuite(m, &cp))
}
