package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/pool"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// teamBudget is the SliceBudget of the demo's last part: class team draws
// from it, and the operator edits it live.
const teamBudget = "team"

// addTeam serves class team on mgr, before it starts, from a budget that
// follows the SliceBudget "team" (budget.FromObject).
func addTeam(mgr manager.Manager, leases resourceslice.Option) error {
	b, err := budget.FromObject(mgr, teamBudget)
	if err != nil {
		return err
	}
	p, err := pool.New(b)
	if err != nil {
		return err
	}
	return resourceslice.AddToManager(mgr, "team", p, p.Option(), leases)
}

// teamTour creates the SliceBudget, two slices of 6 CPU against its 10,
// then raises its total and cuts one consumer to zero, printing the
// object's status (what `kubectl get sb` shows) at each step.
func teamTour(ctx context.Context, c client.Client, say func(string, ...any), out io.Writer,
	newSlice func(consumer, name, class string, req map[corev1.ResourceName]string) *authv1beta1.ResourceSlice) error {
	sb := &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: teamBudget},
		Spec: v1alpha1.SliceBudgetSpec{
			Total:      v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("10")},
			Preemption: &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority},
		},
	}
	say("operator creates SliceBudget team (cpu=10, preemption.withinBudget: LowerPriority); class team draws from it")
	if err := c.Create(ctx, sb); err != nil {
		return fmt.Errorf("creating SliceBudget team: %w", err)
	}
	a := newSlice(alice, "team-a", "team", map[corev1.ResourceName]string{"cpu": "6"})
	b := newSlice(carol, "team-c", "team", map[corev1.ResourceName]string{"cpu": "6"})
	say("alice and carol each ask 6 CPU: one fits, the other waits")
	for _, rs := range []*authv1beta1.ResourceSlice{a, b} {
		if err := slicetest.CreateAsLiqo(ctx, c, rs); err != nil {
			return err
		}
		if _, err := waitDecided(ctx, c, rs); err != nil {
			return err
		}
	}
	if err := showBudget(ctx, c, out, "accepted 1, waiting 1", func(st v1alpha1.SliceBudgetStatus) bool {
		return st.Accepted == 1 && st.Waiting == 1
	}); err != nil {
		return err
	}

	say("operator raises spec.total to cpu=12 (kubectl edit sb team): the waiting slice is admitted, no restart")
	if err := editBudget(ctx, c, func(s *v1alpha1.SliceBudgetSpec) {
		s.Total = v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("12")}
	}); err != nil {
		return err
	}
	for _, rs := range []*authv1beta1.ResourceSlice{a, b} {
		if err := waitFor(ctx, c, rs, authv1beta1.ResourceSliceConditionAccepted); err != nil {
			return fmt.Errorf("%s after raising the total: %w", rs.Name, err)
		}
	}
	if err := showBudget(ctx, c, out, "accepted 2, waiting 0", func(st v1alpha1.SliceBudgetStatus) bool {
		return st.Accepted == 2 && st.Waiting == 0
	}); err != nil {
		return err
	}

	say("operator cuts carol to zero (spec.consumerLimits: [{consumer: %s, limits: {cpu: 0}}]; the consumer is the tenant namespace, which has no cluster-ID label here): carol's slice is shrunk, reason Reclaimed", ns(carol))
	if err := editBudget(ctx, c, func(s *v1alpha1.SliceBudgetSpec) {
		s.ConsumerLimits = []v1alpha1.ConsumerLimitOverride{{Consumer: ns(carol), Limits: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("0")}}}
	}); err != nil {
		return err
	}
	var shrunk *authv1beta1.ResourceSlice
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var got authv1beta1.ResourceSlice
		if err := c.Get(ctx, key(b), &got); err != nil {
			return false, err
		}
		shrunk = &got
		return conditions.Get(&got, authv1beta1.ResourceSliceConditionTypeResources).Reason == budget.ReasonReclaimed, nil
	})
	if err != nil {
		return fmt.Errorf("team-c after carol's limit of 0: %w", err)
	}
	_, _ = fmt.Fprintln(out)
	printTable(out, []row{toRow(shrunk, "")})
	return showBudget(ctx, c, out, "carol holds nothing", func(st v1alpha1.SliceBudgetStatus) bool {
		for _, cs := range st.Consumers {
			if cs.Name == ns(carol) && !cs.Used.Cpu().IsZero() {
				return false
			}
		}
		return st.Used.Cpu().Cmp(resource.MustParse("6")) == 0
	})
}

// editBudget changes the SliceBudget's spec, as kubectl edit would.
func editBudget(ctx context.Context, c client.Client, edit func(*v1alpha1.SliceBudgetSpec)) error {
	var sb v1alpha1.SliceBudget
	if err := c.Get(ctx, client.ObjectKey{Name: teamBudget}, &sb); err != nil {
		return err
	}
	before := sb.DeepCopy()
	edit(&sb.Spec)
	return c.Patch(ctx, &sb, client.MergeFrom(before))
}

// showBudget waits until the SliceBudget's status says what want checks
// (what names it), then prints its CPU figures and its
// consumers.
func showBudget(ctx context.Context, c client.Client, out io.Writer, what string, want func(v1alpha1.SliceBudgetStatus) bool) error {
	var sb v1alpha1.SliceBudget
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: teamBudget}, &sb); err != nil {
			return false, err
		}
		return want(sb.Status), nil
	})
	if err != nil {
		return fmt.Errorf("SliceBudget team's status (%s): %w", what, err)
	}
	st := sb.Status
	_, _ = fmt.Fprintln(out)
	ready := ""
	if c := apimeta.FindStatusCondition(st.Conditions, "Ready"); c != nil {
		ready = string(c.Status)
	}
	_, _ = fmt.Fprintf(out, "SliceBudget status in CPU (kubectl get sb -o wide shows it beside the fullest resource):\n%-6s %-7s %-9s %-8s %-9s %-13s %s\n", "NAME", "READY", "ACCEPTED", "WAITING", "CPU USED", "CPU CAPACITY", "CPU AVAILABLE")
	_, _ = fmt.Fprintf(out, "%-6s %-7s %-9d %-8d %-9s %-13s %s\n", sb.Name, ready, st.Accepted, st.Waiting,
		ptrQ(st.Used, corev1.ResourceCPU), ptrQ(st.Capacity, corev1.ResourceCPU), ptrQ(st.Available, corev1.ResourceCPU))
	var held []string
	for _, cs := range st.Consumers {
		held = append(held, fmt.Sprintf("%s holds cpu=%s, %d waiting", cs.Name, ptrQ(cs.Used, corev1.ResourceCPU), cs.Waiting))
	}
	if len(held) > 0 {
		_, _ = fmt.Fprintf(out, "status.consumers: %s\n", strings.Join(held, "; "))
	}
	return nil
}
