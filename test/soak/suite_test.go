package soak

import (
	"flag"
	"os"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// soakEnv must be "1" for the soak to run: it takes minutes and is measured
// without -race, from its own make target.
const soakEnv = "SLICECLASS_SOAK"

// cp is the control plane the soak runs on; nil when the soak is not asked for.
var cp *controlplane.ControlPlane

// TestMain starts the control plane only when the soak is asked for (and
// not under -short), so a plain go test ./... runs the checks' own tests and
// reports TestSoak as skipped without starting one. Missing envtest
// binaries skip TestSoak (cp.Require), unless SLICECLASS_REQUIRE_ENVTEST is
// set (as in CI), when they fail the package.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() || os.Getenv(soakEnv) != "1" {
		os.Exit(m.Run())
	}
	os.Exit(controlplane.RunSuite(m, &cp))
}
