package soak

import (
	"errors"
	"flag"
	"fmt"
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
// binaries skip the package, unless SLICECLASS_REQUIRE_ENVTEST is set (as
// in CI).
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() || os.Getenv(soakEnv) != "1" {
		os.Exit(m.Run())
	}
	var err error
	cp, err = controlplane.New()
	if err != nil {
		if errors.Is(err, controlplane.ErrNoAssets) && os.Getenv(controlplane.RequireEnv) == "" {
			fmt.Fprintln(os.Stderr, "soak: skipped:", err)
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "soak: stopping control plane:", err)
	}
	os.Exit(code)
}
