package resourceslice_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// benchSetup returns a reconciler over a fake client holding rs, and a
// counter of the API writes it makes.
func benchSetup(b *testing.B, rs *authv1beta1.ResourceSlice, opts ...resourceslice.DecisionOption) (reconcile.Reconciler, client.Client, *atomic.Int64) {
	b.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = authv1beta1.AddToScheme(scheme)
	var writes atomic.Int64
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&authv1beta1.ResourceSlice{}).WithObjects(rs).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				writes.Add(1)
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	r, err := resourceslice.NewReconciler(c, gold, acceptAll("Granted"),
		append([]resourceslice.DecisionOption{resourceslice.WithMetricsRegisterer(prometheus.NewRegistry())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return r, c, &writes
}

// realisticSlice carries what Liqo puts on a slice: a ~1 KiB CSR, a signed
// certificate and CA. (The fake client does not return managedFields, which
// a real API server adds.)
func realisticSlice() *authv1beta1.ResourceSlice {
	rs := goldSlice("a")
	rs.Spec.CSR = bytes.Repeat([]byte("C"), 1024)
	rs.Status.AuthParams.SignedCRT = bytes.Repeat([]byte("S"), 1200)
	rs.Status.AuthParams.CA = bytes.Repeat([]byte("A"), 800)
	return rs
}

// BenchmarkReconcileDecided is the steady state: a decided slice comes back
// (resync, restart, a relevant change that does not move the decision). It
// must cost no API call.
func BenchmarkReconcileDecided(b *testing.B) {
	b.Run("NoBudget", func(b *testing.B) { benchDecided(b) })
	b.Run("Budget", func(b *testing.B) { benchDecided(b, resourceslice.WithBudget(benchBudget(b))) })
}

// benchBudget is a budget the benchmark's slice always fits in.
func benchBudget(b *testing.B) *budget.Budget {
	bg, err := budget.New("bench", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti")})
	if err != nil {
		b.Fatal(err)
	}
	return bg
}

func benchDecided(b *testing.B, opts ...resourceslice.DecisionOption) {
	rs := realisticSlice()
	r, _, writes := benchSetup(b, rs, opts...)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}}
	if _, err := r.Reconcile(context.Background(), req); err != nil || writes.Load() != 1 {
		b.Fatalf("first decision: err %v, writes %d", err, writes.Load())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if w := writes.Load(); w != 1 {
		b.Fatalf("reconciling a decided slice wrote %d times, want none", w-1)
	}
}

// BenchmarkReconcileFirstDecision is one first decision, including the status
// patch on the fake client.
// Sub-benchmarks compare the same class without and with a budget (issue 8:
// the budget's admission must add at most 5% CPU per decision).
func BenchmarkReconcileFirstDecision(b *testing.B) {
	b.Run("NoBudget", func(b *testing.B) { benchFirstDecision(b) })
	b.Run("Budget", func(b *testing.B) { benchFirstDecision(b, resourceslice.WithBudget(benchBudget(b))) })
	// Issue 45: the same budget as one member of a cohort of 10 (its fit
	// reads every member's books): at most 1.2x Budget's CPU, and the same
	// one write per decision (benchFirstDecision checks it).
	b.Run("BudgetInCohortOf10", func(b *testing.B) { benchFirstDecision(b, resourceslice.WithBudget(benchCohortBudget(b, 10))) })
}

// benchCohortBudget is benchBudget as one of n members of a cohort, the
// others as large and idle, so the slice always fits. The benchmark's
// Reconciler runs in no manager: the members are given one set of
// cohorts, as a manager gives those it serves.
func benchCohortBudget(b *testing.B, n int) *budget.Budget {
	cohorts := ledger.NewCohorts()
	total := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti")}
	var first *budget.Budget
	for i := range n {
		bg, err := budget.New(fmt.Sprintf("bench%d", i), total, budget.WithCohort("bench"))
		if err != nil {
			b.Fatal(err)
		}
		ledger.Of(bg).SetCohorts(cohorts)
		if first == nil {
			first = bg
		}
	}
	return first
}

func benchFirstDecision(b *testing.B, opts ...resourceslice.DecisionOption) {
	rs := realisticSlice()
	r, c, writes := benchSetup(b, rs, opts...)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		var cur authv1beta1.ResourceSlice
		if err := c.Get(ctx, req.NamespacedName, &cur); err != nil {
			b.Fatal(err)
		}
		undecided := cur.DeepCopy()
		undecided.Status.Conditions = undecided.Status.Conditions[:1]
		undecided.Status.Resources = nil
		if err := c.Status().Update(ctx, undecided); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if writes.Load() != int64(b.N) {
		b.Fatalf("want one status patch per decision: %d patches for %d decisions", writes.Load(), b.N)
	}
	var got authv1beta1.ResourceSlice
	_ = c.Get(ctx, req.NamespacedName, &got)
	if !conditions.IsAccepted(&got) {
		b.Fatal("not decided")
	}
}
