package privilege

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/internal/classlease"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The scenario's consumers: one whose slices are decided on their own
// merits, one whose Tenant is drained and re-activated.
const (
	consumer       = "consumer"
	tenantConsumer = "drained-consumer"
	intruder       = "intruder"
)

// world is what one run of the scenario works in: a class, namespaces and
// Lease names of its own, so that runs never see each other's objects.
type world struct {
	tag      string
	class    string
	ns       string
	tenantNS string
	podName  string
	// leaderLease and classLease are the Leases the manager holds in
	// saNamespace.
	leaderLease, classLease string
}

// newWorld names a run's objects after tag.
func newWorld(tag string) world {
	class := "priv-" + tag
	return world{
		tag: tag, class: class, ns: "priv-" + tag, tenantNS: "priv-" + tag + "-tenant", podName: "privilege-" + tag,
		// The example manager names its leader-election lease after the
		// served classes.
		leaderLease: "sliceclass-" + class,
		classLease:  classlease.Name(class),
	}
}

// args are the manager's flags: the deploy's, with a budget that three CPUs
// exhaust and a cap of two CPUs per slice.
func (w world) args(kubeconfig string) []string {
	return []string{
		"--kubeconfig", kubeconfig,
		"--class-name", w.class,
		"--cap", "cpu=2,pods=110", // the capped policy offers only what it has a cap for
		"--budget", "cpu=3",
		"--leader-elect", "--leader-election-namespace", saNamespace,
		"--class-lease-namespace", saNamespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
	}
}

// The slices the manager finds when it starts, and the one created once the
// budget is full.
const (
	sliceWithin   = "within"   // 1 CPU: granted
	sliceCapped   = "capped"   // 4 CPU: capped at 2, which fills the budget of 3
	sliceEmpty    = "empty"    // nothing requested: denied by the policy
	sliceIntruder = "intruder" // claims a consumer its namespace contradicts
	sliceOver     = "over"     // 1 CPU once the budget is full
	sliceTenant   = "tenant"   // one pod (not budgeted) of the drained consumer
)

// setup creates, as an administrator, the namespaces (labelled with their
// consumer as Liqo labels tenant namespaces), the Tenants and the slices the
// manager finds when it starts.
func (w world) setup(ctx context.Context) error {
	for ns, id := range map[string]string{w.ns: consumer, w.tenantNS: tenantConsumer} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"liqo.io/remote-cluster-id": id}}}
		if err := cp.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
		tenant := slicetest.NewTenant(id, authv1beta1.TenantConditionActive)
		tenant.Namespace = ns
		if err := cp.Client.Create(ctx, tenant); err != nil {
			return fmt.Errorf("creating Tenant %s/%s: %w", ns, id, err)
		}
	}
	if err := refuseStatus(ctx, w.tag); err != nil {
		return err
	}
	in := slicetest.WithNamespace
	slices := []*authv1beta1.ResourceSlice{
		w.refusedSlice(),
		slicetest.NewSlice(sliceWithin, in(w.ns), slicetest.WithClass(w.class), slicetest.WithRequest(corev1.ResourceCPU, "1")),
		slicetest.NewSlice(sliceCapped, in(w.ns), slicetest.WithClass(w.class), slicetest.WithRequest(corev1.ResourceCPU, "4")),
		slicetest.NewSlice(sliceEmpty, in(w.ns), slicetest.WithClass(w.class)),
		slicetest.NewSlice(sliceIntruder, in(w.ns), slicetest.WithClass(w.class), slicetest.WithConsumer(intruder),
			slicetest.WithRequest(corev1.ResourceCPU, "1")),
		slicetest.NewSlice(sliceTenant, in(w.tenantNS), slicetest.WithClass(w.class), slicetest.WithConsumer(tenantConsumer),
			slicetest.WithRequest(corev1.ResourcePods, "1")),
	}
	for _, rs := range slices {
		if err := slicetest.CreateAsLiqo(ctx, cp.Client, rs); err != nil {
			return fmt.Errorf("creating slice %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

// run is one run of the scenario: the manager process and what the steps
// observed.
type run struct {
	w world
	p *managerProcess

	mu sync.Mutex
	// leaderRenew is the leader-election Lease's renew time when first seen.
	leaderRenew time.Time
}

// step is one outcome the scenario checks.
type step struct {
	name  string
	check func(ctx context.Context) error
}

// steps are the scenario's outcomes, in order: each needs some permission
// of the shipped role, and the last stops the manager.
func (r *run) steps() []step {
	return []step{
		{"leader-election Lease acquired", r.leaderAcquired},
		{"slices decided within and beyond the caps", r.decidedOnMerits},
		{"consumer check read the namespace's label", r.consumerChecked},
		{"BudgetExhausted denial with its Warning event", r.budgetExhausted},
		{"Tenant drained then re-activated", r.tenantFollowed},
		{"a repeated event patched into a series", r.eventRepeated},
		{"leader-election event recorded", r.leaderEvent},
		{"leader-election Lease renewed", r.leaderRenewed},
		{"class Lease created and renewed", r.classLeaseRenewed},
		{"SIGTERM: exit 0, class Lease deleted", r.cleanShutdown},
	}
}

func (r *run) leaderAcquired(ctx context.Context) error {
	return waitFor(ctx, "Lease "+r.w.leaderLease+" held", func(ctx context.Context) (bool, error) {
		lease, err := getLease(ctx, r.w.leaderLease)
		if err != nil || lease == nil || !held(lease) {
			return false, err
		}
		r.mu.Lock()
		r.leaderRenew = lease.Spec.RenewTime.Time
		r.mu.Unlock()
		return true, nil
	})
}

func (r *run) decidedOnMerits(ctx context.Context) error {
	if err := r.waitDecision(ctx, r.w.ns, sliceWithin, authv1beta1.ResourceSliceConditionAccepted, cappedresources.ReasonGranted); err != nil {
		return err
	}
	if err := r.waitDecision(ctx, r.w.ns, sliceCapped, authv1beta1.ResourceSliceConditionAccepted, cappedresources.ReasonCapped); err != nil {
		return err
	}
	if got := r.slice(ctx, r.w.ns, sliceCapped); got == nil || !got.Status.Resources.Cpu().Equal(resource.MustParse("2")) {
		return errors.New("slice capped was not capped at 2 CPU")
	}
	return r.waitDecision(ctx, r.w.ns, sliceEmpty, authv1beta1.ResourceSliceConditionDenied, cappedresources.ReasonNoResources)
}

func (r *run) consumerChecked(ctx context.Context) error {
	if err := r.waitDecision(ctx, r.w.ns, sliceIntruder, authv1beta1.ResourceSliceConditionDenied, "ConsumerMismatch"); err != nil {
		return err
	}
	return r.waitEvent(ctx, r.w.ns, sliceIntruder, "ConsumerMismatch")
}

func (r *run) budgetExhausted(ctx context.Context) error {
	over := slicetest.NewSlice(sliceOver, slicetest.WithNamespace(r.w.ns), slicetest.WithClass(r.w.class),
		slicetest.WithRequest(corev1.ResourceCPU, "1"))
	if err := slicetest.CreateAsLiqo(ctx, cp.Client, over); err != nil {
		return fmt.Errorf("creating slice %s: %w", sliceOver, err)
	}
	if err := r.waitDecision(ctx, r.w.ns, sliceOver, authv1beta1.ResourceSliceConditionDenied, budget.ReasonExhausted); err != nil {
		return err
	}
	return r.waitEvent(ctx, r.w.ns, sliceOver, budget.ReasonExhausted)
}

func (r *run) tenantFollowed(ctx context.Context) error {
	if err := r.waitDecision(ctx, r.w.tenantNS, sliceTenant, authv1beta1.ResourceSliceConditionAccepted, cappedresources.ReasonGranted); err != nil {
		return err
	}
	for _, step := range []struct {
		condition authv1beta1.TenantCondition
		status    authv1beta1.ResourceSliceConditionStatus
		reason    string
	}{
		{authv1beta1.TenantConditionDrained, authv1beta1.ResourceSliceConditionDenied, "TenantDrained"},
		{authv1beta1.TenantConditionActive, authv1beta1.ResourceSliceConditionAccepted, cappedresources.ReasonGranted},
	} {
		if err := setTenant(ctx, r.w.tenantNS, tenantConsumer, step.condition); err != nil {
			return err
		}
		if err := r.waitDecision(ctx, r.w.tenantNS, sliceTenant, step.status, step.reason); err != nil {
			return fmt.Errorf("Tenant %s: %w", step.condition, err)
		}
	}
	return r.waitEvent(ctx, r.w.tenantNS, sliceTenant, "TenantDrained")
}

func (r *run) leaderEvent(ctx context.Context) error {
	return waitFor(ctx, "a LeaderElection event on Lease "+r.w.leaderLease, func(ctx context.Context) (bool, error) {
		var list corev1.EventList
		if err := cp.Client.List(ctx, &list, client.InNamespace(saNamespace)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == r.w.leaderLease && e.Reason == "LeaderElection" {
				return true, nil
			}
		}
		return false, nil
	})
}

func (r *run) leaderRenewed(ctx context.Context) error {
	r.mu.Lock()
	first := r.leaderRenew
	r.mu.Unlock()
	return waitFor(ctx, "Lease "+r.w.leaderLease+" renewed", func(ctx context.Context) (bool, error) {
		lease, err := getLease(ctx, r.w.leaderLease)
		if err != nil || lease == nil || !held(lease) {
			return false, err
		}
		return lease.Spec.RenewTime.After(first), nil
	})
}

func (r *run) classLeaseRenewed(ctx context.Context) error {
	var first time.Time
	if err := waitFor(ctx, "class Lease "+r.w.classLease+" held by "+r.w.podName, func(ctx context.Context) (bool, error) {
		lease, err := getLease(ctx, r.w.classLease)
		if err != nil || lease == nil || !held(lease) || *lease.Spec.HolderIdentity != r.w.podName {
			return false, err
		}
		first = lease.Spec.RenewTime.Time
		return lease.Labels[classlease.Label] == r.w.class, nil
	}); err != nil {
		return err
	}
	return waitFor(ctx, "class Lease "+r.w.classLease+" renewed", func(ctx context.Context) (bool, error) {
		lease, err := getLease(ctx, r.w.classLease)
		if err != nil || lease == nil || lease.Spec.RenewTime == nil {
			return false, err
		}
		return lease.Spec.RenewTime.After(first), nil
	})
}

func (r *run) cleanShutdown(ctx context.Context) error {
	code, err := r.p.stop()
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("the manager exited with code %d after SIGTERM", code)
	}
	lease, err := getLease(ctx, r.w.classLease)
	if err != nil {
		return err
	}
	if lease != nil {
		return fmt.Errorf("class Lease %s still exists after a clean shutdown", r.w.classLease)
	}
	return nil
}

// waitDecision waits for the slice to carry the decision.
func (r *run) waitDecision(ctx context.Context, ns, name string, status authv1beta1.ResourceSliceConditionStatus, reason string) error {
	what := fmt.Sprintf("slice %s/%s %s with reason %s", ns, name, status, reason)
	return waitFor(ctx, what, func(ctx context.Context) (bool, error) {
		rs := r.slice(ctx, ns, name)
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Status == status && c.Reason == reason, nil
	})
}

// slice reads a slice as the administrator; nil if it cannot.
func (r *run) slice(ctx context.Context, ns, name string) *authv1beta1.ResourceSlice {
	var rs authv1beta1.ResourceSlice
	if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs); err != nil {
		return nil
	}
	return &rs
}

// waitEvent waits for an events.k8s.io event with reason regarding the slice.
func (r *run) waitEvent(ctx context.Context, ns, name, reason string) error {
	what := fmt.Sprintf("a %s event regarding slice %s/%s", reason, ns, name)
	return waitFor(ctx, what, func(ctx context.Context) (bool, error) {
		var list eventsv1.EventList
		if err := cp.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}

// setTenant sets a Tenant's condition as Liqo would.
func setTenant(ctx context.Context, ns, name string, c authv1beta1.TenantCondition) error {
	var t authv1beta1.Tenant
	if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &t); err != nil {
		return err
	}
	patch := client.MergeFrom(t.DeepCopy())
	t.Spec.TenantCondition = c
	return cp.Client.Patch(ctx, &t, patch)
}

// getLease reads a Lease in saNamespace; nil when there is none.
func getLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	var lease coordinationv1.Lease
	err := cp.Client.Get(ctx, types.NamespacedName{Namespace: saNamespace, Name: name}, &lease)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &lease, nil
}

// held reports whether a Lease names a holder and a renew time.
func held(lease *coordinationv1.Lease) bool {
	return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && lease.Spec.RenewTime != nil
}

// outcome is what one run of the scenario showed.
type outcome struct {
	// passed are the steps that held, in order; failed is the first that did
	// not ("" when all held) and err why.
	passed []string
	failed string
	err    error
	// forbidden is how many requests the API server refused with 403 during
	// the run; refusals are the manager's stderr lines saying "forbidden".
	forbidden int
	refusals  []string
	elapsed   time.Duration
	stderr    *scanWriter
}

// ok reports whether every step held and nothing was refused.
func (o outcome) ok() bool {
	return o.failed == "" && o.forbidden == 0 && len(o.refusals) == 0
}

// runScenario sets up w, starts the manager with the kubeconfig and checks
// every step. With failFast, the run ends at the first refusal (a 403 on the
// API server's counter or "forbidden" in the manager's stderr) and the
// manager is killed: what matters then is that it failed, not how.
func runScenario(t *testing.T, w world, kubeconfig string, failFast bool) outcome {
	t.Helper()
	start := time.Now()
	base := context.Background()
	if err := w.setup(base); err != nil {
		t.Fatalf("setting up %s: %v", w.tag, err)
	}
	before, err := forbiddenCount(base)
	if err != nil {
		t.Fatalf("reading the API server's 403 count: %v", err)
	}
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	refused := func(cause error) {
		if failFast {
			cancel(cause)
		}
	}
	env := []string{
		// The class Leases name the pod, as the Deployment sets it.
		"POD_NAME=" + w.podName,
		// Informers list, then watch, as against an API server that does
		// not serve streaming lists: envtest's does, and there a reflector
		// only watches, which would hide that "list" is needed.
		"KUBE_FEATURE_WatchListClient=false",
	}
	p := startBinary(t, w.args(kubeconfig), env, func(line string) {
		refused(fmt.Errorf("the manager logged a refusal: %s", line))
	})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if !failFast {
			return
		}
		// Watches for a 403 as long as the run lasts: the run's end
		// cancels ctx.
		_ = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
			n, err := forbiddenCount(ctx)
			return err == nil && n > before, nil
		})
		if ctx.Err() == nil {
			refused(errors.New("the API server answered 403"))
		}
	}()
	r := &run{w: w, p: p}
	out := outcome{stderr: p.stderr}
	for _, s := range r.steps() {
		if err := s.check(ctx); err != nil {
			out.failed, out.err = s.name, err
			break
		}
		out.passed = append(out.passed, s.name)
	}
	if out.failed != "" {
		p.kill()
	}
	cancel(nil)
	<-watchDone
	after, err := forbiddenCount(base)
	if err != nil {
		t.Fatalf("reading the API server's 403 count: %v", err)
	}
	out.forbidden = after - before
	out.refusals = p.stderr.lines()
	out.elapsed = time.Since(start)
	return out
}

// refusalPattern finds what RBAC refused in a "forbidden" message, whose
// quotes a logger may have escaped.
var refusalPattern = regexp.MustCompile(`cannot (\w+) resource \\?"([^"\\]+)\\?" in API group \\?"([^"\\]*)\\?"`)

// summary is the first refusal in the manager's stderr, shortened to what
// was refused ("refused update leases (coordination.k8s.io)"), or the
// failed step.
func (o outcome) summary() string {
	for _, l := range o.refusals {
		if m := refusalPattern.FindStringSubmatch(l); m != nil {
			group := m[3]
			if group == "" {
				group = "core"
			}
			return fmt.Sprintf("refused %s %s (%s)", m[1], m[2], group)
		}
	}
	if o.failed != "" {
		return o.failed + ": " + o.err.Error()
	}
	return "nothing"
}
