package integration

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	eventsv1 "k8s.io/api/events/v1"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// cp is the control plane shared by the suite; each test works in its own
// namespace with its own class names, so tests do not see each other.
var cp *controlplane.ControlPlane

// TestMain starts one control plane for the suite. Without envtest binaries
// the suite is skipped, unless SLICECLASS_REQUIRE_ENVTEST is set (as in CI);
// -short skips it too.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	var err error
	cp, err = controlplane.New()
	if err != nil {
		if errors.Is(err, controlplane.ErrNoAssets) && os.Getenv(controlplane.RequireEnv) == "" {
			fmt.Fprintln(os.Stderr, "integration: skipped:", err)
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	if err := eventsv1.AddToScheme(cp.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "integration: stopping control plane:", err)
	}
	os.Exit(code)
}
