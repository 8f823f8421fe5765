package faults

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane shared by the tests that do not restart it; each
// works in its own namespaces with its own class names.
var cp *controlplane.ControlPlane

// TestMain starts the shared control plane (controlplane.RunSuite): the
// tests on it begin with cp.Require(t), which skips them under -short (these
// tests take minutes) or without envtest binaries, unless
// SLICECLASS_REQUIRE_ENVTEST is set (as in CI), when missing binaries fail
// the suite. The restart test starts a control plane of its own.
func TestMain(m *testing.M) {
	// Injected faults make controller-runtime log hundreds of expected
	// errors; the tests count what matters themselves.
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(controlplane.RunSuite(m, &cp))
}
