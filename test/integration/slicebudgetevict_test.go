package integration

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// spec.evictionAfterSeconds: 0 evicts as soon as a shrunk slice's pods are
// seen using more than it keeps (issue 44: the field is ≥ 0, and 0 is not
// "never", which unset says): globex's slice of 8, whose pods use 2
// (oldest), 2 and 4 (newest), is cut to 2 by a consumer limit; its two
// newest pods are evicted, the oldest runs on.
func TestSliceBudgetEvictionAfterZero(t *testing.T) {
	c := sbClient(t)
	ns := tenantNamespace(t, "sb-evict0-globex", "sb-evict0-globex")
	offloaded := testkit.Namespace(t, cp, "sb-evict0-offloaded")
	createSliceBudget(t, c, "sb-evict0", v1alpha1.SliceBudgetSpec{Total: cpuList("10"), EvictionAfterSeconds: ptr.To[int32](0)})
	objectClass(t, "sb-evict0", "sb-evict0", withLiqoQuotas)
	create(t, sliceIn(ns, "s", "sb-evict0", slicetest.WithConsumer("sb-evict0-globex"), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "globex's slice Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, ns, "s")) && quotaIs(ns, "s", "8")()
	})
	pods := runShadowPodsByAge(t, offloaded, quotaUser(t, ns), "2", "2", "4")
	oldest, mid, newest := pods[0], pods[1], pods[2]

	editSliceBudget(t, c, "sb-evict0", func(s *v1alpha1.SliceBudgetSpec) {
		s.ConsumerLimits = []v1alpha1.ConsumerLimitOverride{{Consumer: "sb-evict0-globex", Limits: cpuList("2")}}
	})
	testkit.Eventually(t, "the two newest pods are evicted", func() bool { return !exists(t, newest) && !exists(t, mid) })
	testkit.Consistently(t, time.Second, "the oldest fits what globex keeps: it runs on", func() bool { return exists(t, oldest) })
	testkit.Eventually(t, "status: 2 in use, nothing reclaiming", func() bool {
		st := sliceBudget(t, c, "sb-evict0").Status
		return cpuIs(st.InUse, "2") && cpuIs(st.Reclaiming, "0")
	})
}
