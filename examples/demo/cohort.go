package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The demo's cohort: SliceBudgets tier-gold (cpu=4, lends all of it, takes
// it back from anyone) and tier-spot (cpu=1, may borrow 3) in cohort
// tiers, each followed by its class's budget.
var tierBudgets = []string{"tier-gold", "tier-spot"}

// tierBudgetsOf follows the cohort's SliceBudgets on mgr, before it
// starts.
func tierBudgetsOf(mgr manager.Manager) (map[string]*budget.Budget, error) {
	out := map[string]*budget.Budget{}
	for _, name := range tierBudgets {
		b, err := budget.FromObject(mgr, name)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// tiersTour creates the cohort's SliceBudgets, serves classes tier-spot
// (priority 0) and tier-gold (priority 10) in the class set, lets spot
// borrow all gold has idle, then has gold's slice take back what it
// lacks: spot's slice is shrunk by that (reason Reclaimed), not evicted.
func tiersTour(ctx context.Context, c client.Client, classes *resourceslice.ClassSet, budgets map[string]*budget.Budget, say func(string, ...any), out io.Writer,
	newSlice func(consumer, name, class string, req map[corev1.ResourceName]string) *authv1beta1.ResourceSlice) error {
	cpu := func(q string) v1alpha1.Quantities {
		return v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse(q)}
	}
	gold := &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: "tier-gold"}, Spec: v1alpha1.SliceBudgetSpec{
		Total: cpu("4"), Cohort: "tiers", Preemption: &v1alpha1.SliceBudgetPreemption{ReclaimWithinCohort: v1alpha1.CohortReclaimAny}}}
	spot := &v1alpha1.SliceBudget{ObjectMeta: metav1.ObjectMeta{Name: "tier-spot"}, Spec: v1alpha1.SliceBudgetSpec{
		Total: cpu("1"), Cohort: "tiers", BorrowingLimit: cpu("3")}}
	say("operator creates SliceBudgets tier-gold (cpu=4, cohort tiers, preemption.reclaimWithinCohort: Any) and tier-spot (cpu=1, cohort tiers, borrowingLimit cpu=3)")
	for _, sb := range []*v1alpha1.SliceBudget{gold, spot} {
		if err := c.Create(ctx, sb); err != nil {
			return fmt.Errorf("creating SliceBudget %s: %w", sb.Name, err)
		}
	}
	asked := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	for _, x := range []struct {
		class string
		prio  int32
	}{{"tier-spot", 0}, {"tier-gold", 10}} {
		if err := classes.Serve(x.class, asked, resourceslice.WithBudget(budgets[x.class]), resourceslice.WithPriority(x.prio)); err != nil {
			return err
		}
	}
	s := newSlice(carol, "spot-1", "tier-spot", map[corev1.ResourceName]string{"cpu": "4"})
	say("carol's spot slice asks 4 CPU: spot's 1 and the 3 gold leaves idle")
	if err := slicetest.CreateAsLiqo(ctx, c, s); err != nil {
		return err
	}
	if err := waitFor(ctx, c, s, authv1beta1.ResourceSliceConditionAccepted); err != nil {
		return fmt.Errorf("spot-1: %w", err)
	}
	if err := showTiers(ctx, c, out, "spot borrows 3", func(st map[string]v1alpha1.SliceBudgetStatus) bool {
		return ptrQ(st["tier-spot"].Borrowed, corev1.ResourceCPU) == "3" && ptrQ(st["tier-gold"].Lent, corev1.ResourceCPU) == "3"
	}); err != nil {
		return err
	}
	g := newSlice(alice, "gold-1", "tier-gold", map[corev1.ResourceName]string{"cpu": "3"})
	say("alice's gold slice asks 3 CPU: gold's idle 1 is not enough, so gold takes back the 2 it lacks by shrinking spot's slice (spot keeps its own 1 and the 1 gold still lends)")
	if err := slicetest.CreateAsLiqo(ctx, c, g); err != nil {
		return err
	}
	if err := waitFor(ctx, c, g, authv1beta1.ResourceSliceConditionAccepted); err != nil {
		return fmt.Errorf("gold-1: %w", err)
	}
	var rows []row
	for _, rs := range []*authv1beta1.ResourceSlice{s, g} {
		got, err := waitDecided(ctx, c, rs)
		if err != nil {
			return err
		}
		rows = append(rows, toRow(got, ""))
	}
	_, _ = fmt.Fprintln(out)
	printTable(out, rows)
	return showTiers(ctx, c, out, "spot borrows 1, gold holds 3", func(st map[string]v1alpha1.SliceBudgetStatus) bool {
		return ptrQ(st["tier-spot"].Borrowed, corev1.ResourceCPU) == "1" && ptrQ(st["tier-gold"].Used, corev1.ResourceCPU) == "3" &&
			ptrQ(st["tier-gold"].Lent, corev1.ResourceCPU) == "1"
	})
}

// showTiers waits until the cohort's SliceBudgets' status says what want
// checks (what names it), then prints their CPU figures (kubectl get sb
// shows the fullest resource, borrowed and lent; -o wide the CPU figures).
func showTiers(ctx context.Context, c client.Client, out io.Writer, what string, want func(map[string]v1alpha1.SliceBudgetStatus) bool) error {
	var got []v1alpha1.SliceBudget
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got = got[:0]
		st := map[string]v1alpha1.SliceBudgetStatus{}
		for _, name := range tierBudgets {
			var sb v1alpha1.SliceBudget
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &sb); err != nil {
				return false, err
			}
			got = append(got, sb)
			st[name] = sb.Status
		}
		return want(st), nil
	})
	if err != nil {
		return fmt.Errorf("the cohort's SliceBudgets' status (%s): %w", what, err)
	}
	_, _ = fmt.Fprintln(out, "\nSliceBudgets tier-gold and tier-spot, their status in CPU:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NAME\tREADY\tACCEPTED\tWAITING\tCPU USED\tCPU CAPACITY\tCPU AVAILABLE\tCPU BORROWED\tCPU LENT")
	for _, sb := range got {
		st := sb.Status
		ready := ""
		if c := apimeta.FindStatusCondition(st.Conditions, "Ready"); c != nil {
			ready = string(c.Status)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", sb.Name, ready, st.Accepted, st.Waiting,
			ptrQ(st.Used, corev1.ResourceCPU), ptrQ(st.Capacity, corev1.ResourceCPU), ptrQ(st.Available, corev1.ResourceCPU),
			ptrQ(st.Borrowed, corev1.ResourceCPU), ptrQ(st.Lent, corev1.ResourceCPU))
	}
	return tw.Flush()
}
