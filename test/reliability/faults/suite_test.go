package faults

import (
	"errors"
	"flag"
	"fmt"
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
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	// Injected faults make controller-runtime log hundreds of expected
	// errors; the tests count what matters themselves.
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	var err error
	cp, err = controlplane.New()
	if err != nil {
		if errors.Is(err, controlplane.ErrNoAssets) && os.Getenv(controlplane.RequireEnv) == "" {
			fmt.Fprintln(os.Stderr, "faults: skipped:", err)
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: stopping control plane:", err)
	}
	os.Exit(code)
}
