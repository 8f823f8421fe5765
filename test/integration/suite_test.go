package integration

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane shared by the suite; each test works in its own
// namespace with its own class names, so tests do not see each other.
var cp *controlplane.ControlPlane

// TestMain starts one control plane for the suite (controlplane.RunSuite):
// every test begins with cp.Require(t), which skips it under -short or
// without envtest binaries, unless SLICECLASS_REQUIRE_ENVTEST is set (as in
// CI), when missing binaries fail the suite.
//
// controller-runtime's logger is set (to discard): left unset, it keeps
// every logger derived from it until it is set, which a test counting the
// heap across a thousand class starts would see as a leak.
func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunSuite(m, &cp))
}
