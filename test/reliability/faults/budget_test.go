package faults

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// TestFaultsBudgetNeitherOverCommitsNorLeaks runs a budgeted class through
// the faulty transport, with Liqo's own QuotaCreator making a Quota for
// each Accepted slice: 60 slices of 1 CPU against 20, 4 workers, a share of
// the status patches applied with their answers lost, watches refused and
// cut, and 20 slices (Accepted ones among them) deleted while it runs. At
// every watched event the provider grants at most 20 CPU; at the end the 40
// slices left hold exactly 20 (nothing leaked) and the budget counts
// exactly that.
func TestFaultsBudgetNeitherOverCommitsNorLeaks(t *testing.T) {
	cp.Require(t)
	const (
		slices = 60
		total  = 20
	)
	ctx := context.Background()
	ns, class := "faults-budget", "faults-budget"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	w := grantwatch.Watch(t, cp.Config, cp.Scheme, ns, fmt.Sprint(total))
	b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(total, resource.DecimalSI)})
	require.NoError(t, err)

	in := newInjector(faultySetting, faultSeed(t))
	var calls atomic.Int64
	testkit.StartManagerWith(t, in.config(cp.Config), testkit.ManagerOptions(t, cp.Scheme), func(mgr manager.Manager) error {
		if err := grantwatch.RunLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, class, capped(0, &calls), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithMaxConcurrentReconciles(4),
			resourceslice.WithRetryBackoff(10*time.Millisecond, 500*time.Millisecond))
	})

	var specs []sliceSpec
	for i := range slices {
		specs = append(specs, sliceSpec{ns: ns, name: fmt.Sprintf("s-%02d", i), class: class, cpu: 1})
	}
	require.NoError(t, createAll(ctx, cp.Client, specs, func(sliceSpec) {}))
	accepted := func() (n int, items []authv1beta1.ResourceSlice) {
		var list authv1beta1.ResourceSliceList
		require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(ns)))
		for i := range list.Items {
			if conditions.IsAccepted(&list.Items[i]) {
				n++
			}
		}
		return n, list.Items
	}
	poll.Eventually(t, fmt.Sprintf("%d slices Accepted", total), func() bool { n, _ := accepted(); return n == total })

	// Delete every third slice over a few seconds, Accepted ones among them.
	deleted := 0
	for i := 0; i < slices && deleted < slices/3; i += 3 {
		var rs authv1beta1.ResourceSlice
		require.NoError(t, cp.Client.Get(ctx, specs[i].key(), &rs))
		require.NoError(t, cp.Client.Delete(ctx, &rs))
		deleted++
		time.Sleep(150 * time.Millisecond)
	}
	poll.Eventually(t, fmt.Sprintf("the %d slices left hold exactly the budget", slices-deleted), func() bool {
		n, items := accepted()
		return len(items) == slices-deleted && n == total
	})
	poll.Eventually(t, "the budget counts exactly what is granted", func() bool {
		used := b.Used()[corev1.ResourceCPU]
		return used.Cmp(*resource.NewQuantity(total, resource.DecimalSI)) == 0
	})
	w.Check(t)
	applied, answered, unanswered := in.writes.totals()
	assert.Positive(t, in.count(faultLost), "no answer was lost")
	t.Logf("RELIABILITY: faults budget slices=%d total=%d deleted=%d faults=%d (%s) status_patches applied=%d answered=%d unanswered=%d handler_calls=%d (%.2f per slice)",
		slices, total, deleted, in.total(), faultCounts(in), applied, answered, unanswered, calls.Load(), float64(calls.Load())/slices)
}
