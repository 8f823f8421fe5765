package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Issue 50's cohort as a user builds it: SliceBudgets whose specs name one
// cohort, each followed by budget.FromObject, their classes served by one
// ClassSet of one manager beside Liqo's own QuotaCreator, and slices
// created as Liqo creates them. Everything the tests assert is read from
// the cluster (slices, Liqo's Quotas, SliceBudgets, events): they hold
// whatever the SDK does inside.

// sbMember is one SliceBudget of a cohort under test.
type sbMember struct {
	name string
	spec v1alpha1.SliceBudgetSpec
}

// sbClass is a class the cohort's ClassSet serves: its priority and the
// SliceBudgets (by name) it draws from.
type sbClass struct {
	name    string
	prio    int32
	budgets []string
}

// sbCohort is a running manager serving a cohort's classes.
type sbCohort struct {
	t       *testing.T
	m       *testkit.Manager
	cs      *resourceslice.ClassSet
	budgets map[string]*budget.Budget
	classes map[string]sbClass
}

// member builds a SliceBudget of the cohort with total CPU, changed by edits.
func member(name, cohort, total string, edits ...func(*v1alpha1.SliceBudgetSpec)) sbMember {
	spec := v1alpha1.SliceBudgetSpec{Total: cpuList(total), Cohort: cohort}
	for _, e := range edits {
		e(&spec)
	}
	return sbMember{name: name, spec: spec}
}

// borrowingUpTo sets the member's borrowingLimit in CPU.
func borrowingUpTo(q string) func(*v1alpha1.SliceBudgetSpec) {
	return func(s *v1alpha1.SliceBudgetSpec) { s.BorrowingLimit = cpuList(q) }
}

// reclaiming sets the member's reclaimWithinCohort.
func reclaiming(p v1alpha1.CohortReclaimPolicy) func(*v1alpha1.SliceBudgetSpec) {
	return func(s *v1alpha1.SliceBudgetSpec) {
		if s.Preemption == nil {
			s.Preemption = &v1alpha1.SliceBudgetPreemption{}
		}
		s.Preemption.ReclaimWithinCohort = p
	}
}

// createMembers creates the SliceBudgets, deleted when the test ends.
func createMembers(t *testing.T, members ...sbMember) {
	t.Helper()
	for _, m := range members {
		createSliceBudget(t, cp.Client, m.name, m.spec)
	}
}

// startCohort creates the members and starts a manager serving classes
// (see serveCohort).
func startCohort(t *testing.T, members []sbMember, classes ...sbClass) *sbCohort {
	t.Helper()
	createMembers(t, members...)
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.name
	}
	return serveCohort(t, names, classes...)
}

// serveCohort starts a manager running Liqo's QuotaCreator and one
// ClassSet serving classes, each drawing from its SliceBudgets (which must
// exist among members), granting what is asked.
func serveCohort(t *testing.T, members []string, classes ...sbClass) *sbCohort {
	t.Helper()
	sc := &sbCohort{t: t, budgets: map[string]*budget.Budget{}, classes: map[string]sbClass{}}
	for _, c := range classes {
		sc.classes[c.name] = c
	}
	sc.m = testkit.StartManagerWith(t, cp.Config, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		for _, name := range members {
			b, err := budget.FromObject(mgr, name)
			if err != nil {
				return err
			}
			sc.budgets[name] = b
		}
		var err error
		if sc.cs, err = resourceslice.NewClassSet(mgr, resourceslice.WithoutTenantRule()); err != nil {
			return err
		}
		for _, c := range classes {
			if err := sc.cs.Serve(c.name, accept("Granted", nil), sc.options(c)...); err != nil {
				return err
			}
		}
		return nil
	})
	return sc
}

func (sc *sbCohort) options(c sbClass) []resourceslice.Option {
	opts := []resourceslice.Option{resourceslice.WithPriority(c.prio)}
	for _, b := range c.budgets {
		opts = append(opts, resourceslice.WithBudget(sc.budgets[b]))
	}
	return opts
}

// stop stops serving class at run time (ClassSet.Stop): its slices keep
// their grants and Liqo's Quotas.
func (sc *sbCohort) stop(class string) {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	require.NoError(sc.t, sc.cs.Stop(ctx, class))
}

// serve serves class again (ClassSet.Serve) with the budgets it had.
func (sc *sbCohort) serve(class string) {
	sc.t.Helper()
	c := sc.classes[class]
	require.NoError(sc.t, sc.cs.Serve(class, accept("Granted", nil), sc.options(c)...))
}

// sliceRef names a slice on the server.
type sliceRef struct{ ns, name string }

// ask creates slice name of class in the tenant namespace ns (of consumer
// cluster-<ns>) asking cpu, and returns it.
func ask(t *testing.T, ns, name, class, cpu string) sliceRef {
	t.Helper()
	create(t, sliceIn(ns, name, class, slicetest.WithConsumer("cluster-"+ns), slicetest.WithRequest(corev1.ResourceCPU, cpu)))
	return sliceRef{ns, name}
}

// tenant creates the tenant namespace ns of consumer cluster-<ns>.
func tenant(t *testing.T, ns string) string {
	t.Helper()
	return tenantNamespace(t, ns, "cluster-"+ns)
}

// held is what the slices hold by Liqo's Quotas (what the provider's
// webhook enforces), summed, and per slice for a message.
func held(slices ...sliceRef) (resource.Quantity, string) {
	var sum resource.Quantity
	parts := make([]string, len(slices))
	for i, s := range slices {
		q, ok := quotaCPU(s.ns, s.name)
		if !ok {
			parts[i] = s.name + "=none"
			continue
		}
		sum.Add(q)
		parts[i] = s.name + "=" + q.String()
	}
	return sum, strings.Join(parts, " ")
}

// quotasStayWithin polls Liqo's Quotas of slices for d (a short, fixed
// window: nothing may over-commit during it) and fails the test if their
// CPU ever sums above limit, or if notAccepted (may be empty) is ever
// Accepted.
func quotasStayWithin(t *testing.T, d time.Duration, limit string, slices []sliceRef, notAccepted ...sliceRef) {
	t.Helper()
	lim := resource.MustParse(limit)
	start := time.Now()
	ok := testkit.Every(50*time.Millisecond).Holds(d, func() bool {
		if sum, each := held(slices...); sum.Cmp(lim) > 0 {
			t.Errorf("after %s, Liqo's Quotas sum to %s CPU against the cohort's %s: %s",
				time.Since(start).Round(time.Millisecond), sum.String(), limit, each)
			return false
		}
		for _, s := range notAccepted {
			if rs := get(t, s.ns, s.name); conditions.IsAccepted(rs) {
				t.Errorf("after %s, %s is Accepted with %s CPU: %s", time.Since(start).Round(time.Millisecond),
					s.name, rs.Status.Resources.Cpu().String(), resourcesMessage(t, s))
				return false
			}
		}
		return true
	})
	if !ok {
		t.FailNow()
	}
}

// resourcesMessage is the slice's Resources condition, as "Status/Reason:
// message".
func resourcesMessage(t *testing.T, s sliceRef) string {
	c := conditions.Get(get(t, s.ns, s.name), authv1beta1.ResourceSliceConditionTypeResources)
	if c == nil {
		return "no decision"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// accepted reports whether the slice is Accepted with cpu.
func accepted(t *testing.T, s sliceRef, cpu string) func() bool {
	return func() bool { return offerIs(t, s.ns, s.name, cpu, "") }
}

// offerAtMost reports whether the slice's grant and Quota are both at
// most cpu.
func offerAtMost(t *testing.T, s sliceRef, cpu string) bool {
	lim := resource.MustParse(cpu)
	rs := get(t, s.ns, s.name)
	if conditions.IsAccepted(rs) && rs.Status.Resources.Cpu().Cmp(lim) > 0 {
		return false
	}
	q, ok := quotaCPU(s.ns, s.name)
	return !ok || q.Cmp(lim) <= 0
}

// waiting asserts that the slice is decided and waits (Denied), its
// message saying why and naming one of names (its budget, its cohort).
func waiting(t *testing.T, s sliceRef, names ...string) {
	t.Helper()
	c := conditions.Get(waitForDecision(t, s.ns, s.name), authv1beta1.ResourceSliceConditionTypeResources)
	require.NotNil(t, c)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, c.Status, "%s must wait: %s/%s: %s", s.name, c.Status, c.Reason, c.Message)
	require.NotEmpty(t, c.Reason, "%s says why it waits", s.name)
	for _, n := range names {
		if strings.Contains(c.Message, n) {
			return
		}
	}
	t.Fatalf("%s waits (%s) with a message naming none of %v: %q", s.name, c.Reason, names, c.Message)
}

// overCohort reports whether the SliceBudget's CapacityBelowUsed
// condition is True with a message naming cohort.
func overCohort(t *testing.T, name, cohort string) func() bool {
	return func() bool {
		c := meta(sliceBudget(t, cp.Client, name).Status.Conditions, "CapacityBelowUsed")
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, cohort)
	}
}

// belowUsedCondition describes the SliceBudget's CapacityBelowUsed
// condition, for a failure message.
func belowUsedCondition(t *testing.T, name string) string {
	sb := sliceBudget(t, cp.Client, name)
	c := meta(sb.Status.Conditions, "CapacityBelowUsed")
	if c == nil {
		return fmt.Sprintf("%s: no CapacityBelowUsed condition (used %v, capacity %v)", name, sb.Status.Used, sb.Status.Capacity)
	}
	return fmt.Sprintf("%s: CapacityBelowUsed=%s %s: %q (used %s, capacity %s, borrowed %s)", name, c.Status, c.Reason, c.Message,
		sb.Status.Used.Cpu().String(), sb.Status.Capacity.Cpu().String(), sb.Status.Borrowed.Cpu().String())
}

// warnedBelowUsed reports whether the SliceBudget has a Warning event
// CapacityBelowUsed whose note names cohort.
func warnedBelowUsed(t *testing.T, name, cohort string) func() bool {
	return func() bool {
		for _, e := range budgetEvents(t, name) {
			if e.Type == corev1.EventTypeWarning && e.Reason == "CapacityBelowUsed" && strings.Contains(e.Note, cohort) {
				return true
			}
		}
		return false
	}
}

// membersUsed sums the CPU the members' SliceBudget statuses say their
// slices hold.
func membersUsed(t *testing.T, names ...string) (resource.Quantity, string) {
	var sum resource.Quantity
	parts := make([]string, len(names))
	for i, n := range names {
		u := sliceBudget(t, cp.Client, n).Status.Used.Cpu()
		sum.Add(*u)
		parts[i] = n + "=" + u.String()
	}
	return sum, strings.Join(parts, " ")
}

// capacityIs reports whether the SliceBudget's status shows a CPU capacity
// of q (its spec edit applied).
func capacityIs(t *testing.T, name, q string) func() bool {
	return func() bool { return cpuIs(sliceBudget(t, cp.Client, name).Status.Capacity, q) }
}

// eventuallySays is testkit.Eventually that, when it gives up, says what
// the cluster shows then (now), not only what it waited for.
func eventuallySays(t *testing.T, what string, cond func() bool, now func() string) {
	t.Helper()
	if testkit.Every(50*time.Millisecond).Holds(testwait.Timeout, func() bool { return !cond() }) {
		t.Fatalf("timed out after %s waiting for %s; now: %s", testwait.Timeout, what, now())
	}
}

// pokeWhileServing asks the slice again, alternating its CPU request
// between alt and cpu every 50 ms for about a second, ending at cpu, while
// it checks that the slice is never Accepted with more than most: each
// ask is a decision made while a member's class starts (its books
// listing), the moment a member not yet counted used to lend what its
// slices hold.
func pokeWhileServing(t *testing.T, s sliceRef, cpu, alt, most string) {
	t.Helper()
	lim := resource.MustParse(most)
	for i := range 20 {
		q := alt
		if i%2 == 1 {
			q = cpu
		}
		for {
			rs := get(t, s.ns, s.name)
			if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); conditions.IsAccepted(rs) && rs.Status.Resources.Cpu().Cmp(lim) > 0 {
				t.Fatalf("%s Accepted with %s CPU (at most %s may be) while a member's class starts: %s",
					s.name, rs.Status.Resources.Cpu().String(), most, c.Message)
			}
			rs.Spec.Resources[corev1.ResourceCPU] = resource.MustParse(q)
			err := cp.Client.Update(context.Background(), rs)
			if !apierrors.IsConflict(err) {
				require.NoError(t, err)
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
