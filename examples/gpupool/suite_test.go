package gpupool_test

import (
	"os"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane of the package's envtest tests.
var cp *controlplane.ControlPlane

// TestMain starts one control plane for the package (controlplane.RunSuite).
// The envtest test begins with cp.Require(t), which skips it under -short or
// without envtest binaries (unless SLICECLASS_REQUIRE_ENVTEST is set, when
// missing binaries fail the package); the policy's unit tests always run.
func TestMain(m *testing.M) {
	os.Exit(controlplane.RunSuite(m, &cp))
}
