package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// What on call reads is what is in force (issue 51): status.consumerLimits
// shows each consumer limit the budget enforces, and whether the budget
// counts a slice of its consumer. A merge patch that replaces the list with
// a mistyped consumer ("acmee") shows at once: acme's cap is gone from the
// status, and the new entry limits a consumer the budget knows nothing of.
func TestSliceBudgetStatusShowsConsumerLimitsInForce(t *testing.T) {
	c := sbClient(t)
	ns := tenantNamespace(t, "sb-inforce-acme", "sb-inforce-acme")
	createSliceBudget(t, c, "sb-inforce", v1alpha1.SliceBudgetSpec{Total: cpuList("10"),
		ConsumerLimits: []v1alpha1.ConsumerLimitOverride{{Consumer: "sb-inforce-acme", Limits: cpuList("6")}}})
	objectClass(t, "sb-inforce", "sb-inforce")
	create(t, sliceIn(ns, "s", "sb-inforce", slicetest.WithConsumer("sb-inforce-acme"), slicetest.WithRequest(corev1.ResourceCPU, "2")))
	testkit.Eventually(t, "acme's slice Accepted", func() bool { return conditions.IsAccepted(get(t, ns, "s")) })

	shows := func(want ...string) func() bool {
		return func() bool {
			var got []string
			for _, l := range sliceBudget(t, c, "sb-inforce").Status.ConsumerLimits {
				cpu := l.Limits[corev1.ResourceCPU]
				got = append(got, fmt.Sprintf("%s cpu=%s known=%v", l.Consumer, cpu.String(), l.Known))
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		}
	}
	testkit.Eventually(t, "status.consumerLimits shows acme's limit, acme known", shows("sb-inforce-acme cpu=6 known=true"))

	// kubectl patch --type merge replaces the whole list.
	patch := []byte(`{"spec":{"consumerLimits":[{"consumer":"sb-inforce-acmee","limits":{"cpu":"6"}}]}}`)
	if err := c.Patch(context.Background(), &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: "sb-inforce"}},
		client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "status.consumerLimits shows the typo, a consumer the budget knows no slice of, and acme's cap gone",
		shows("sb-inforce-acmee cpu=6 known=false"))
}
