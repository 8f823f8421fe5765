package integration

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// A trimmed cache (no csr, no authParams, no managedFields) must not make the
// controller erase those fields on the server.
func TestTrimmedCacheKeepsServerFields(t *testing.T) {
	ns := namespace(t, "trim")
	rs := sliceIn(ns, "t", "trim")
	create(t, rs)

	opts := manager.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	resourceslice.TrimCache(&opts.Cache)
	startManagerWith(t, opts, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "trim", accept("Granted", nil))
	})
	eventually(t, 30*time.Second, "decision", decided(ns, "t"))
	got := get(t, ns, "t")
	if !conditions.IsAccepted(got) || string(got.Spec.CSR) != "csr" || got.Status.AuthParams == nil || string(got.Status.AuthParams.SignedCRT) != "crt" {
		t.Errorf("trimmed fields were erased on the server: csr %q authParams %+v", got.Spec.CSR, got.Status.AuthParams)
	}
	if len(got.ManagedFields) == 0 {
		t.Error("the server's managedFields must be untouched")
	}
}
