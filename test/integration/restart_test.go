package integration

import (
	"fmt"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// Restart: a new manager finds every slice decided and writes nothing.
func TestRestart(t *testing.T) {
	cp.Require(t)
	const n = 20
	ns := testkit.Namespace(t, cp, "restart")
	var names []string
	for i := range n {
		name := fmt.Sprintf("r-%02d", i)
		names = append(names, name)
		create(t, sliceIn(ns, name, "restart"))
	}
	stop := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "restart", accept("Granted", nil))
	}).Stop
	testkit.Eventually(t, "all decided", decided(ns, names...))
	stop()

	type snap struct{ rv, ltt string }
	before := map[string]snap{}
	for _, name := range names {
		rs := get(t, ns, name)
		before[name] = snap{rs.ResourceVersion, conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).LastTransitionTime.String()}
	}
	patches := statusPatches(t)

	var c calls
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "restart", accept("Granted", &c))
	})
	testkit.Eventually(t, "the new manager re-evaluated every slice", func() bool { return c.total.Load() >= n })
	testkit.Consistently(t, time.Second, "the restarted manager writes no status", func() bool {
		return statusPatches(t) == patches
	})
	for _, name := range names {
		rs := get(t, ns, name)
		got := snap{rs.ResourceVersion, conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources).LastTransitionTime.String()}
		assert.Equal(t, before[name], got, "%s changed on restart", name)
	}
}
