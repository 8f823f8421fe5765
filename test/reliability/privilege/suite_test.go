package privilege

import (
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

// TestMain builds the example manager (not under -short) and starts the
// shared control plane (controlplane.RunSuite): the tests on it begin with
// cp.Require(t), which skips them under -short or without envtest binaries,
// unless SLICECLASS_REQUIRE_ENVTEST is set (as in CI), when missing binaries
// fail the suite. The variant generator's test needs neither.
func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

// runSuite is TestMain's body, so that deferred clean-ups run before the exit.
func runSuite(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return controlplane.RunSuite(m, &cp)
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
	return controlplane.RunSuite(m, &cp)
}
