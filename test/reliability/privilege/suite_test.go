package privilege

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

var (
	// cp is the control plane shared by the tests, which run one after
	// another: the API server's 403 counter cannot tell two managers apart.
	cp *controlplane.ControlPlane
	// managerBin is the example manager, built from examples/manager.
	managerBin string
)

// managerPackage is the command the tests run as a subprocess.
const managerPackage = "github.com/sliceclass/sliceclass/examples/manager"

// TestMain builds the example manager and starts the shared control plane.
// Without envtest binaries the suite is skipped, unless
// SLICECLASS_REQUIRE_ENVTEST is set (as in CI); -short skips it too.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	os.Exit(runSuite(m))
}

// runSuite is TestMain's body, so that deferred clean-ups run before the exit.
func runSuite(m *testing.M) int {
	if _, err := controlplane.AssetsDir(); err != nil {
		if errors.Is(err, controlplane.ErrNoAssets) && os.Getenv(controlplane.RequireEnv) == "" {
			fmt.Fprintln(os.Stderr, "privilege: skipped:", err)
			return 0
		}
		fmt.Fprintln(os.Stderr, "privilege:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "sliceclass-privilege-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "privilege:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	managerBin = filepath.Join(dir, "manager")
	if out, err := exec.Command("go", "build", "-o", managerBin, managerPackage).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "privilege: building %s: %v\n%s", managerPackage, err, out)
		return 1
	}
	cp, err = controlplane.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "privilege:", err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "privilege: stopping control plane:", err)
		}
	}()
	return m.Run()
}
