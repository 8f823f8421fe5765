package gpupool_test

import (
	"os"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane of the package's envtest tests.
var cp *controlplane.ControlPlane

// TestMain starts one control plane for the package. Without envtest
// binaries the envtest tests are skipped (unless SLICECLASS_REQUIRE_ENVTEST
// is set); -short runs none of the package's tests.
func TestMain(m *testing.M) {
	os.Exit(controlplane.RunSuite(m, &cp))
}
