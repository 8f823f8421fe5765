package faults

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
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

// lostAnswerSeedsEnv names the environment variable that sets how many
// seeds TestFaultsBudgetFirstAdmittedDeleted runs (default 10).
const lostAnswerSeedsEnv = "FAULTS_LOST_SEEDS"

// TestFaultsBudgetFirstAdmittedDeleted is the lost-answer scenario in the
// order that once left a budget admitting nothing, for good: 60 slices of 1
// CPU created in order against a budget of 10, 4 workers, a short retry
// backoff, 30% of the controller's writes applied with their answers lost
// and a few watches refused; then the first 30 slices (those admitted
// first) are deleted, one every 200ms. For each seed, after the last
// deletion (how long after is logged) exactly the budget's worth of the
// slices left is Accepted, and the budget counts exactly what the cluster
// shows; Liqo's QuotaCreator runs beside the class, and at no watched event
// do the grants exceed the budget.
func TestFaultsBudgetFirstAdmittedDeleted(t *testing.T) {
	cp.Require(t)
	seeds := 10
	if v := os.Getenv(lostAnswerSeedsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "%s=%q", lostAnswerSeedsEnv, v)
		seeds = n
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { runFirstAdmittedDeleted(t, seed) })
	}
}

// lostAnswerRates: every status PATCH is answered 503, and 30% of them
// were applied; a few watches are refused.
var lostAnswerRates = faultRates{statusLost: 0.3, statusRefused: 0.7, watch: 0.1}

func runFirstAdmittedDeleted(t *testing.T, seed int64) {
	const (
		slices  = 60
		total   = 10
		deleted = 30
	)
	ctx := context.Background()
	ns := fmt.Sprintf("lost-first-%d", seed)
	class := ns
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(total, resource.DecimalSI)})
	require.NoError(t, err)
	in := newInjector(lostAnswerRates, seed)
	var calls atomic.Int64
	w := grantwatch.Watch(t, cp.Config, cp.Scheme, ns, fmt.Sprint(total))
	testkit.StartManagerWith(t, in.config(cp.Config), testkit.ManagerOptions(t, cp.Scheme), func(mgr manager.Manager) error {
		// Liqo's own QuotaCreator beside the class, as on a provider.
		if err := grantwatch.RunLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, class, capped(0, &calls), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithMaxConcurrentReconciles(4),
			resourceslice.WithRetryBackoff(5*time.Millisecond, time.Second))
	})
	specs := make([]sliceSpec, slices)
	for i := range specs {
		specs[i] = sliceSpec{ns: ns, name: fmt.Sprintf("l-%02d", i), class: class, cpu: 1}
		// In order: the first created are the first admitted.
		require.NoError(t, createAll(ctx, cp.Client, specs[i:i+1], func(sliceSpec) {}))
	}
	accepted := func() (n, left int) {
		var list authv1beta1.ResourceSliceList
		require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(ns)))
		for i := range list.Items {
			if conditions.IsAccepted(&list.Items[i]) {
				n++
			}
		}
		return n, len(list.Items)
	}
	poll.Eventually(t, fmt.Sprintf("%d slices Accepted", total), func() bool { n, _ := accepted(); return n == total })
	for i := range deleted {
		var rs authv1beta1.ResourceSlice
		require.NoError(t, cp.Client.Get(ctx, specs[i].key(), &rs))
		require.NoError(t, cp.Client.Delete(ctx, &rs))
		time.Sleep(200 * time.Millisecond)
	}
	last := time.Now()
	var n, left int
	poll.Eventually(t, fmt.Sprintf("%d of the %d slices left Accepted after the last deletion", total, slices-deleted), func() bool {
		n, left = accepted()
		return left == slices-deleted && n == total
	})
	took := time.Since(last)
	poll.Eventually(t, "the budget counts exactly what is granted", func() bool {
		used := b.Used()[corev1.ResourceCPU]
		return used.Cmp(*resource.NewQuantity(total, resource.DecimalSI)) == 0
	})
	w.Check(t)
	t.Logf("RELIABILITY: lost answers, first admitted deleted: seed=%d settled %s after the last deletion; faults %s", seed, took.Round(time.Millisecond), faultCounts(in))
}
