package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// A trimmed cache (no csr, no authParams, no managedFields) must not make the
// controller erase those fields on the server.
func TestTrimmedCacheKeepsServerFields(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "trim")
	create(t, sliceIn(ns, "t", "trim"))

	opts := testkit.ManagerOptions(t, cp.Scheme)
	resourceslice.DropUnreadSliceFields(&opts.Cache)
	testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "trim", accept("Granted", nil))
	})
	got := waitForDecision(t, ns, "t")
	assert.True(t, conditions.IsAccepted(got))
	assert.Equal(t, "csr", string(got.Spec.CSR), "the trimmed csr was erased on the server")
	if assert.NotNil(t, got.Status.AuthParams, "the trimmed authParams were erased on the server") {
		assert.Equal(t, "crt", string(got.Status.AuthParams.SignedCRT))
	}
	assert.NotEmpty(t, got.ManagedFields, "the server's managedFields must be untouched")
}
