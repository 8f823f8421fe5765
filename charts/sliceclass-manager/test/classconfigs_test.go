package charttest

import (
	"context"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// TestChartsClassSettingsServe is issue 44's item 2 on the chart: one
// place for a class's settings. The values give two classes different
// priorities, both drawing from one SliceBudget of 4 CPU the chart
// creates. The example manager, and a user's manager whose main is one
// loop over flags.Values.ClassConfigs (testdata/flagsmanager, its own
// module, nothing but the flags package to read the file), each run with
// the rendered args, classes file and RBAC, must serve them as the values
// say: spot's slice holds the 4 CPU; a spot slice, then a gold slice, of
// 3 CPU each wait; once the holder is deleted, gold's (priority 100) is
// admitted before spot's older one, which waits on; and the SliceBudget's
// status counts both classes' slices.
func TestChartsClassSettingsServe(t *testing.T) {
	cp.Require(t)
	for _, m := range []struct{ name, dir, pkg string }{
		{"example", repoRoot, "./examples/manager"},
		{"flagsonly", "testdata/flagsmanager", "."},
	} {
		t.Run(m.name, func(t *testing.T) {
			// Names of this run's own: the other run's manager is gone,
			// but its slices and SliceBudget stay behind.
			ns := "sc-cfg-" + m.name
			budget, gold, spot := ns+"-tiers", m.name+"gold", m.name+"spot"
			objs := render(t, ns, fmt.Sprintf(`
sliceBudgets:
  - name: %[1]s
    spec: {total: {cpu: "4"}}
classes:
  budgets: []
  classes:
    - {name: %[2]s, caps: {cpu: "4"}, sliceBudget: %[1]s, priority: 100}
    - {name: %[3]s, caps: {cpu: "4"}, sliceBudget: %[1]s}
`, budget, gold, spot))
			install(t, objs)
			t.Cleanup(func() {
				_ = cp.Client.Delete(context.Background(), &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: budget}})
			})
			p := serve(t, ns, objs, managerBinary(t, m.dir, m.pkg))
			// Each wait below gives up after envkit.WaitTimeout on its own.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p.ready(ctx, t)

			tenantNS := ns + "-tenant"
			require.NoError(t, envkit.CreateTenantNamespace(ctx, cp.Client, tenantNS, slicetest.DefaultConsumer))
			_, err := envkit.CreateTenant(ctx, cp.Client, tenantNS, slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)
			require.NoError(t, err)
			slice := func(name, class string) *authv1beta1.ResourceSlice {
				cpu := "3"
				if name == "holder" {
					cpu = "4"
				}
				rs := slicetest.NewSlice(name, slicetest.WithNamespace(tenantNS), slicetest.WithClass(class),
					slicetest.WithRequest(corev1.ResourceCPU, cpu))
				require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
				return rs
			}
			holder := slice("holder", spot)
			eventually(ctx, t, "spot's holder granted the budget's 4 CPU", func() bool {
				return grantedCPU(ctx, client.ObjectKeyFromObject(holder)) == 4
			})

			// Spot's waiter first, then gold's: both wait for the holder.
			spotWaiter := slice("spot-waiter", spot)
			waiting(ctx, t, spotWaiter)
			goldWaiter := slice("gold-waiter", gold)
			waiting(ctx, t, goldWaiter)
			eventually(ctx, t, "the SliceBudget's status: spot's holder accepted, a slice of each class waiting", func() bool {
				st, ok := sliceBudgetStatus(ctx, budget)
				return ok && st.Accepted == 1 && st.Waiting == 2
			})

			require.NoError(t, cp.Client.Delete(ctx, holder))
			eventually(ctx, t, "gold's waiter (priority 100) admitted with 3 CPU", func() bool {
				return grantedCPU(ctx, client.ObjectKeyFromObject(goldWaiter)) == 3
			})
			eventually(ctx, t, "the SliceBudget's status: gold's slice accepted, spot's waiting, 3 CPU used", func() bool {
				st, ok := sliceBudgetStatus(ctx, budget)
				used := st.Used[corev1.ResourceCPU]
				return ok && st.Accepted == 1 && st.Waiting == 1 && used.Cmp(resource.MustParse("3")) == 0
			})
			assert.Equal(t, int64(-1), grantedCPU(ctx, client.ObjectKeyFromObject(spotWaiter)),
				"spot's older waiter still waits: 1 CPU is free, it asks 3")
			p.stop(ctx, t)
		})
	}
}

// grantedCPU is the CPU an Accepted slice holds, -1 while it is not
// Accepted (or cannot be read).
func grantedCPU(ctx context.Context, key client.ObjectKey) int64 {
	var rs authv1beta1.ResourceSlice
	if cp.Client.Get(ctx, key, &rs) != nil || !conditions.IsAccepted(&rs) {
		return -1
	}
	return rs.Status.Resources.Cpu().Value()
}

// waiting waits until rs is Denied for now: its budget has no room.
func waiting(ctx context.Context, t *testing.T, rs *authv1beta1.ResourceSlice) {
	t.Helper()
	var got authv1beta1.ResourceSlice
	eventually(ctx, t, rs.Name+" waiting on its budget", func() bool {
		if cp.Client.Get(ctx, client.ObjectKeyFromObject(rs), &got) != nil {
			return false
		}
		c := conditions.Get(&got, authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied
	})
}

// sliceBudgetStatus reads the named SliceBudget's status.
func sliceBudgetStatus(ctx context.Context, name string) (v1alpha1.SliceBudgetStatus, bool) {
	var sb v1alpha1.SliceBudget
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, &sb); err != nil {
		return v1alpha1.SliceBudgetStatus{}, false
	}
	return sb.Status, true
}
