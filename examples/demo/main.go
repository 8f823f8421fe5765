// Command demo shows the SDK at work with no cluster: it starts an embedded
// kube-apiserver and etcd with Liqo's CRDs, runs a manager serving two
// classes with different policies (one drawing from a budget), plays a
// consumer (creating and deleting slices) and Liqo (authenticating them,
// draining a tenant), reports a slice of a class nobody serves, adds that
// class at run time, and prints the decisions. Then a GPU class over a node
// pool: a GPU node added at run time raises the pool, a consumer is stopped
// at its limit of 2 GPUs while another is admitted, and one consumer's
// burst does not starve another's single slice (fair order).
//
//	make demo        # builds the control-plane binaries on first use
//	go run ./examples/demo   # with KUBEBUILDER_ASSETS set
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/examples/pool"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

const (
	alice  = "alice"
	bob    = "bob"
	system = "sliceclass-system" // where class Leases live
	// timeout bounds each of the demo's waits for something to happen (a
	// decision, an event, a pool's total, the manager's cache): each ends
	// as soon as it happens, normally in well under a second, but on a
	// loaded machine (CI runs the demo as a test) it can take tens of
	// seconds. Past two minutes something is wrong.
	timeout = 2 * time.Minute
)

func ns(consumer string) string { return "liqo-tenant-" + consumer }

// expectation is what the demo waits for on one slice.
type expectation struct {
	slice    *authv1beta1.ResourceSlice
	decision authv1beta1.ResourceSliceConditionStatus // "" = must stay undecided
	note     string
}

func main() {
	if err := run(os.Stderr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func run(progress, out io.Writer) error {
	ctrl.SetLogger(logr.Discard())
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(progress, "demo: "+format+"\n", args...) }

	say("starting an embedded control plane (kube-apiserver + etcd) with Liqo's CRDs...")
	start := time.Now()
	cp, err := controlplane.New()
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the control plane")
		_ = cp.Stop()
	}()
	say("control plane up in %s", time.Since(start).Round(100*time.Millisecond))

	// Each wait below is bounded by timeout on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := cp.Client
	// The manager's scheme: the control plane's (client-go's and Liqo's
	// types), what the SDK reads and writes, and events for the tour's
	// reads.
	for _, add := range []func(*runtime.Scheme) error{authv1beta1.AddToScheme, offloadingv1beta1.AddToScheme, v1alpha1.AddToScheme, eventsv1.AddToScheme} {
		if err := add(cp.Scheme); err != nil {
			return err
		}
	}
	for _, name := range []string{ns(alice), ns(bob), ns(carol), system} {
		if err := cp.CreateNamespace(ctx, name); err != nil {
			return err
		}
	}
	// Liqo keeps a Tenant per consumer; bob's has been drained by an operator.
	for consumer, cond := range map[string]authv1beta1.TenantCondition{
		alice: authv1beta1.TenantConditionActive, bob: authv1beta1.TenantConditionDrained, carol: authv1beta1.TenantConditionActive,
	} {
		t := slicetest.NewTenant(consumer, cond)
		t.Namespace = ns(consumer)
		if err := c.Create(ctx, t); err != nil {
			return fmt.Errorf("creating tenant %s: %w", consumer, err)
		}
	}

	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	caps, _ := cappedresources.ParseCaps("cpu=4,memory=8Gi")
	capped, err := cappedresources.New(caps)
	if err != nil {
		return err
	}
	b, err := budget.New("shared", corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
	})
	if err != nil {
		return err
	}
	shared, err := pool.New(b)
	if err != nil {
		return err
	}
	leases := resourceslice.WithClassLease(system)
	if err := resourceslice.AddToManager(mgr, "gold", capped, resourceslice.WithMaxConcurrentReconciles(2), leases); err != nil {
		return err
	}
	if err := resourceslice.AddToManager(mgr, "shared", shared, shared.Option(), leases); err != nil {
		return err
	}
	// The GPU pool starts with one node of 2 GPUs.
	if err := createGPUNode(ctx, c, "gpu-1", "2"); err != nil {
		return err
	}
	gpus, err := addPools(mgr, leases)
	if err != nil {
		return err
	}
	if err := addTeam(mgr, leases); err != nil {
		return err
	}
	tiers, err := tierBudgetsOf(mgr)
	if err != nil {
		return err
	}
	// Classes added while the manager runs, and slices nobody serves.
	classes, err := resourceslice.NewClassSet(mgr, leases)
	if err != nil {
		return err
	}
	if err := resourceslice.AddUnservedReporter(mgr, system, 2*time.Second); err != nil {
		return err
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, timeout)
	synced := mgr.GetCache().WaitForCacheSync(syncCtx)
	cancelSync()
	if !synced {
		return fmt.Errorf("manager cache did not sync within %s", timeout)
	}
	say("manager serving classes gold (capped at cpu=4, memory=8Gi) and shared (a budget of cpu=8, memory=16Gi)")

	slice := func(consumer, name, class string, req map[corev1.ResourceName]string, opts ...slicetest.SliceOption) *authv1beta1.ResourceSlice {
		o := []slicetest.SliceOption{slicetest.WithConsumer(consumer), slicetest.WithNamespace(ns(consumer)), slicetest.WithClass(class)}
		for r, q := range req {
			o = append(o, slicetest.WithRequest(r, q))
		}
		return slicetest.NewSlice(name, append(o, opts...)...)
	}
	exps := []expectation{
		{slice: slice(alice, "gold-small", "gold", map[corev1.ResourceName]string{"cpu": "2", "memory": "4Gi"}), decision: authv1beta1.ResourceSliceConditionAccepted},
		{slice: slice(alice, "gold-large", "gold", map[corev1.ResourceName]string{"cpu": "16", "memory": "32Gi", "pods": "110"}), decision: authv1beta1.ResourceSliceConditionAccepted},
		{slice: slice(alice, "gold-empty", "gold", nil), decision: authv1beta1.ResourceSliceConditionDenied},
		{slice: slice(bob, "gold-drained", "gold", map[corev1.ResourceName]string{"cpu": "2"}), decision: authv1beta1.ResourceSliceConditionDenied},
		{slice: slice(alice, "bronze-1", "bronze", map[corev1.ResourceName]string{"cpu": "1"}), note: "waiting (no controller for class)"},
	}
	late := expectation{slice: slice(alice, "gold-late", "gold", map[corev1.ResourceName]string{"cpu": "1"}, slicetest.Unauthenticated()), decision: authv1beta1.ResourceSliceConditionAccepted}
	pooled := []expectation{
		{slice: slice(alice, "shared-1", "shared", map[corev1.ResourceName]string{"cpu": "2", "memory": "4Gi"}), decision: authv1beta1.ResourceSliceConditionAccepted},
		{slice: slice(alice, "shared-2", "shared", map[corev1.ResourceName]string{"cpu": "4", "memory": "8Gi"}), decision: authv1beta1.ResourceSliceConditionAccepted},
		{slice: slice(alice, "shared-3", "shared", map[corev1.ResourceName]string{"cpu": "4", "memory": "2Gi"}), decision: authv1beta1.ResourceSliceConditionDenied, note: "waits for budget"},
	}

	say("consumer creates %d slices (Liqo has authenticated all but gold-late)", len(exps)+len(pooled)+1)
	for _, e := range append(exps, late) {
		if err := slicetest.CreateAsLiqo(ctx, c, e.slice); err != nil {
			return err
		}
	}
	// Pool slices arrive one after the other, as a consumer asking for more.
	for _, e := range pooled {
		if err := slicetest.CreateAsLiqo(ctx, c, e.slice); err != nil {
			return err
		}
		if _, err := waitDecided(ctx, c, e.slice); err != nil {
			return err
		}
	}

	var failures []string
	say("gold-late waits for Liqo's authentication")
	early, err := waitUndecided(ctx, c, late.slice, time.Second)
	if err != nil {
		return err
	}
	if conditions.IsDecided(early) {
		failures = append(failures, "gold-late: decided before Liqo authenticated it")
	}
	say("Liqo authenticates gold-late")
	if err := slicetest.Authenticate(ctx, c, key(late.slice)); err != nil {
		return err
	}

	all := append(append(exps, pooled...), late)
	rows := make([]row, 0, len(all))
	for _, e := range all {
		var got *authv1beta1.ResourceSlice
		if e.decision == "" {
			got, err = waitUndecided(ctx, c, e.slice, 500*time.Millisecond)
		} else {
			got, err = waitDecided(ctx, c, e.slice)
		}
		if err != nil {
			return err
		}
		r := toRow(got, e.note)
		if r.decision != string(orDash(e.decision)) {
			failures = append(failures, fmt.Sprintf("%s: want %s, got %s", got.Name, orDash(e.decision), r.decision))
		}
		rows = append(rows, r)
	}
	printTable(out, rows)

	// The budget: shared-3 waits with BudgetExhausted until capacity frees.
	say("consumer deletes shared-2: its 4 CPU return to the budget, and the waiting shared-3 is admitted")
	if err := c.Delete(ctx, pooled[1].slice); err != nil {
		return err
	}
	if err := waitFor(ctx, c, pooled[2].slice, authv1beta1.ResourceSliceConditionAccepted); err != nil {
		return fmt.Errorf("shared-3 after the deletion: %w", err)
	}
	free := b.Free()
	say("shared-3 Accepted; budget shared: used cpu=%s, free cpu=%s", ptrQ(b.Used(), corev1.ResourceCPU), ptrQ(free, corev1.ResourceCPU))

	// Nobody serves bronze: the reporter says so, then the class is added.
	note, err := waitEvent(ctx, c, exps[4].slice, "NoClassController")
	if err != nil {
		return err
	}
	say("reported on bronze-1: %s: %s", "NoClassController", note)
	say("serving class bronze at run time (no restart)")
	if err := classes.Serve("bronze", capped); err != nil {
		return err
	}
	if err := waitFor(ctx, c, exps[4].slice, authv1beta1.ResourceSliceConditionAccepted); err != nil {
		return fmt.Errorf("bronze-1 after serving bronze: %w", err)
	}
	var after []row
	for _, rs := range []*authv1beta1.ResourceSlice{pooled[2].slice, exps[4].slice} {
		got, err := waitDecided(ctx, c, rs)
		if err != nil {
			return err
		}
		after = append(after, toRow(got, ""))
	}
	_, _ = fmt.Fprintln(out)
	printTable(out, after)

	say("serving class gpu (a node pool of the nodes labelled pool=gpu, at most 2 GPUs per consumer) and burst (a budget of cpu=4)")
	if err := gpus.tour(ctx, c, say, out, func(consumer, name, class string, req map[corev1.ResourceName]string) *authv1beta1.ResourceSlice {
		return slice(consumer, name, class, req)
	}); err != nil {
		return err
	}
	if err := teamTour(ctx, c, say, out, func(consumer, name, class string, req map[corev1.ResourceName]string) *authv1beta1.ResourceSlice {
		return slice(consumer, name, class, req)
	}); err != nil {
		return err
	}
	if err := tiersTour(ctx, c, classes, tiers, say, out, func(consumer, name, class string, req map[corev1.ResourceName]string) *authv1beta1.ResourceSlice {
		return slice(consumer, name, class, req)
	}); err != nil {
		return err
	}
	// Metering: what alice's slices held in budget shared over the tour.
	held, err := cpuSecondsOf("shared", ns(alice))
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "\nmetering: consumer %s held %.1f CPU-seconds in budget shared over the tour (sliceclass_consumer_granted_seconds_total)\n", ns(alice), held)

	cancel()
	if err := <-mgrDone; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("manager: %w", err)
	}
	if len(failures) > 0 {
		return fmt.Errorf("unexpected decisions: %s", strings.Join(failures, "; "))
	}
	return nil
}

func key(rs *authv1beta1.ResourceSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
}

// waitDecided waits for the slice's decision, for at most timeout.
func waitDecided(ctx context.Context, c client.Reader, rs *authv1beta1.ResourceSlice) (*authv1beta1.ResourceSlice, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return slicetest.WaitForDecision(ctx, c, key(rs))
}

// waitUndecided gives a slice that must wait (no controller serves its class,
// or Liqo has not authenticated it) d to be decided anyway, and returns it as
// last read: the caller checks it is still undecided.
func waitUndecided(ctx context.Context, c client.Reader, rs *authv1beta1.ResourceSlice, d time.Duration) (*authv1beta1.ResourceSlice, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	got, err := slicetest.WaitForDecision(ctx, c, key(rs))
	if err != nil && (!errors.Is(err, context.DeadlineExceeded) || got == nil) {
		return nil, err
	}
	return got, nil
}

// waitFor waits until the slice's decision is want.
func waitFor(ctx context.Context, c client.Reader, rs *authv1beta1.ResourceSlice, want authv1beta1.ResourceSliceConditionStatus) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var got authv1beta1.ResourceSlice
		if err := c.Get(ctx, key(rs), &got); err == nil {
			if cond := conditions.Get(&got, authv1beta1.ResourceSliceConditionTypeResources); cond != nil && cond.Status == want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", want, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitEvent waits for an event with reason on the slice and returns its note.
func waitEvent(ctx context.Context, c client.Reader, rs *authv1beta1.ResourceSlice, reason string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(rs.Namespace)); err == nil {
			for _, e := range evs.Items {
				if e.Regarding.Name == rs.Name && e.Reason == reason {
					return e.Note, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for a %s event on %s: %w", reason, rs.Name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func ptrQ(rl corev1.ResourceList, name corev1.ResourceName) string {
	q := rl[name]
	return q.String()
}

type row struct {
	slice, class, requested, granted, decision, reason string
}

func orDash[T ~string](s T) T {
	if s == "" {
		return "-"
	}
	return s
}

func toRow(rs *authv1beta1.ResourceSlice, note string) row {
	r := row{slice: rs.Namespace + "/" + rs.Name, class: string(rs.Spec.Class),
		requested: list(rs.Spec.Resources), granted: list(rs.Status.Resources), decision: "-", reason: note}
	if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
		r.decision, r.reason = string(c.Status), c.Reason
	}
	if r.reason == "" {
		r.reason = "-"
	}
	return r
}

func list(rl corev1.ResourceList) string {
	if len(rl) == 0 {
		return "-"
	}
	var parts []string
	for name, q := range rl {
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func printTable(out io.Writer, rows []row) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "SLICE\tCLASS\tREQUESTED\tGRANTED\tDECISION\tREASON")
	counts := map[string]int{}
	for _, r := range rows {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.slice, r.class, r.requested, r.granted, r.decision, r.reason)
		counts[r.decision]++
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintf(out, "\n%d slices: %d Accepted, %d Denied, %d undecided\n",
		len(rows), counts[string(authv1beta1.ResourceSliceConditionAccepted)], counts[string(authv1beta1.ResourceSliceConditionDenied)], counts["-"])
}

// cpuSecondsOf reads consumer's sliceclass_consumer_granted_seconds_total
// for cpu in budgetName from controller-runtime's registry, where the
// classes' metrics are (docs/metering.md).
func cpuSecondsOf(budgetName, consumer string) (float64, error) {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != "sliceclass_consumer_granted_seconds_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["budget"] == budgetName && l["consumer"] == consumer && l["resource"] == "cpu" {
				return m.GetCounter().GetValue(), nil
			}
		}
	}
	return 0, fmt.Errorf("no metering of consumer %s in budget %s", consumer, budgetName)
}
