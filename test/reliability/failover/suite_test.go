package failover

import (
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// debugLogEnv, when set, makes the managers log at debug level, with every
// request of each replica, in development mode (millisecond times).
const debugLogEnv = "SLICECLASS_RELIABILITY_DEBUG"

// cp is the control plane of the suite; each test uses its own namespaces,
// classes and leader-election Leases.
var cp *controlplane.ControlPlane

// TestMain starts one control plane for the suite (controlplane.RunSuite):
// every test begins with cp.Require(t), which skips it under -short or
// without envtest binaries, unless SLICECLASS_REQUIRE_ENVTEST is set (as in
// CI), when missing binaries fail the suite. Managers log errors only (a
// crashed replica's failed requests are expected), to stderr; everything
// with SLICECLASS_RELIABILITY_DEBUG.
func TestMain(m *testing.M) {
	level := zapcore.ErrorLevel
	if os.Getenv(debugLogEnv) != "" {
		level = zapcore.Level(-1) // controller-runtime's V(1): every reconcile
	}
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level), zap.UseDevMode(level < 0),
		func(o *zap.Options) { o.TimeEncoder = zapcore.ISO8601TimeEncoder }))
	os.Exit(controlplane.RunSuite(m, &cp))
}
