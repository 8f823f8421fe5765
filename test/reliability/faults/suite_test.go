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

// TestMain starts the shared control plane. Without envtest binaries the
// suite is skipped, unless SLICECLASS_REQUIRE_ENVTEST is set (as in CI);
// -short skips it too: these tests take minutes.
func TestMain(m *testing.M) {
	// Injected faults make controller-runtime log hundreds of expected
	// errors; the tests count what matters themselves.
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(controlplane.RunSuite(m, &cp))
}
