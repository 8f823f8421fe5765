package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// The scale phase's fleet: its slices are spread over scaleClasses classes
// and scaleTenants consumers, each with its tenant namespace and Tenant.
const (
	scaleClasses = 10
	scaleTenants = 500
	// scaleWriters create the slices and tenants in parallel.
	scaleWriters = 16
	// scaleLabel marks each slice with the size of the run it belongs to;
	// a replica caches only its run's slices (scaleSelector).
	scaleLabel = "bench.sliceclass.io/scale"
	// scaleNamespace holds the replicas' leader-election Leases.
	scaleNamespace = "bench-scale"
	// remoteClusterIDLabel is the label Liqo sets on a tenant namespace
	// and its Tenant: the consumer's cluster ID.
	remoteClusterIDLabel = "liqo.io/remote-cluster-id"
)

// placeSlice places slice i of a run: on tenant i mod tenants, and on
// class (tenant + i/tenants) mod classes, so that every class gets an
// equal share (±1 when classes divide tenants), and each tenant's slices,
// one per pass over the tenants, go to successive classes.
func placeSlice(i, tenants, classes int) (tenant, class int) {
	tenant = i % tenants
	return tenant, (tenant + i/tenants) % classes
}

func tenantNamespace(t int) string { return fmt.Sprintf("liqo-tenant-%03d", t) }
func tenantConsumer(t int) string  { return fmt.Sprintf("consumer-%03d", t) }
func scaleClass(c int) string      { return fmt.Sprintf("scale-%d", c) }

// bytesPerSlice is each of n slices' share of what total holds beyond
// base (negative when total is smaller); 0 without slices.
func bytesPerSlice(total, base uint64, n int) float64 {
	if n < 1 {
		return 0
	}
	return (float64(total) - float64(base)) / float64(n)
}

// marginal is the growth of a figure per slice from one size to the next:
// (y − yPrev) / (n − nPrev); 0 when the sizes are equal.
func marginal(yPrev, y float64, nPrev, n int) float64 {
	if n == nPrev {
		return 0
	}
	return (y - yPrev) / float64(n-nPrev)
}

// parseScaleN parses -scale-n: "0" (or nothing) turns the phase off,
// otherwise positive counts, run smallest first.
func parseScaleN(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" || strings.TrimSpace(s) == "0" {
		return nil, nil
	}
	counts, err := parseCounts("scale-n", s)
	if err != nil {
		return nil, err
	}
	slices.Sort(counts)
	return slices.Compact(counts), nil
}

// scaleRun is what the phase measured at one size.
type scaleRun struct {
	n int
	// created is how long creating the n slices took (not measured below).
	created time.Duration
	// From the leader's manager start to its election, its slice cache
	// synced, its first decision, all n decided.
	elected, synced, first, decided time.Duration
	// mem is the leader's memory with all n decided.
	mem scaleEvent
	// takeovers are the standby takeovers: with EnableWarmup first, then
	// (with -scale-cold) without.
	takeovers []takeover
}

// takeover is one standby taking over from a stopping leader.
type takeover struct {
	warmup bool
	// ready is the standby's memory while it waits for the Lease.
	ready scaleEvent
	// From the leader's stop to the standby leading, to its first decision
	// of a fresh slice, to every fresh slice decided, to every slice
	// evaluated; and to the old leader's exit.
	toLeader, toFirst, toAll, toEvaluated, leaderExit time.Duration
}

// scalePhase runs, at each size of -scale-n, one replica holding that many
// realistic slices spread over scaleClasses classes and scaleTenants
// tenants, and standbys taking over from it, each a child process, and
// adds the scale section to t.
func scalePhase(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table) error {
	sizes, err := parseScaleN(f.scaleN)
	if err != nil || len(sizes) == 0 {
		return err
	}
	say("scale: creating %d tenants...", scaleTenants)
	if err := cp.CreateNamespace(ctx, scaleNamespace); err != nil {
		return err
	}
	if err := createTenants(ctx, cp.Client); err != nil {
		return err
	}
	cfgFile, err := writeConfig(cp.Config)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(cfgFile) }()
	say("scale: an empty manager (the tenants, no slice)...")
	empty, err := emptyReplica(cfgFile)
	if err != nil {
		return err
	}
	var runs []scaleRun
	for _, n := range sizes {
		r, err := scaleAt(ctx, cp, f, t, n, cfgFile)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	t.add("scale: classes / tenants / fresh slices per takeover", fmt.Sprintf("%d / %d / %d", scaleClasses, scaleTenants, f.scaleFresh))
	t.add("scale: empty manager (tenants cached, no slice): heap / RSS", fmt.Sprintf("%s / %s", mib(empty.Heap), mib(empty.RSS)))
	t.extra = append(t.extra, scaleSection(runs, empty, f.scaleFresh))
	return nil
}

// createTenants creates each tenant's namespace, labelled with its
// consumer's cluster ID, and its Tenant, as Liqo leaves them.
func createTenants(ctx context.Context, c client.Client) error {
	return parallel(scaleWriters, scaleTenants, func(i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNamespace(i), Labels: map[string]string{remoteClusterIDLabel: tenantConsumer(i)}}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		tn := slicetest.NewTenant(tenantConsumer(i), authv1beta1.TenantConditionActive)
		tn.Namespace = ns.Name
		if err := c.Create(ctx, tn); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// createScaleSlices creates count undecided realistic slices of the run
// at size n, numbered from, with scaleWriters writers, as Liqo does
// (create, then a status PUT).
func createScaleSlices(ctx context.Context, c client.Client, n, from, count int, prefix string) error {
	return parallel(scaleWriters, count, func(j int) error {
		i := from + j
		tenant, class := placeSlice(i, scaleTenants, scaleClasses)
		rs := realisticSlice(tenantNamespace(tenant), fmt.Sprintf("%s-%06d", prefix, i), scaleClass(class), false)
		slicetest.WithConsumer(tenantConsumer(tenant))(rs)
		rs.Labels[scaleLabel] = strconv.Itoa(n)
		return slicetest.CreateAsLiqo(ctx, c, rs)
	})
}

// emptyReplica measures a replica caching the tenants and no slice, which
// leads a Lease of its own: the base the bytes per cached slice are
// counted from.
func emptyReplica(cfgFile string) (scaleEvent, error) {
	p, err := startReplica("empty", cfgFile, scaleChildSpec{Election: "bench-scale-empty", Measure: true})
	if err != nil {
		return scaleEvent{}, err
	}
	defer p.close()
	m, err := p.await(evMemory, 2*time.Minute)
	if err != nil {
		return scaleEvent{}, err
	}
	p.stop()
	return m, p.wait(time.Minute)
}

// decideTimeout bounds how long a replica may take to decide or
// re-evaluate n slices: generous, for a loaded 2-core machine.
func decideTimeout(n int) time.Duration { return 5*time.Minute + time.Duration(n)*20*time.Millisecond }

// scaleAt creates n slices, starts a leader deciding them, then standbys
// taking over: with EnableWarmup, then (with -scale-cold) without.
func scaleAt(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table, n int, cfgFile string) (scaleRun, error) {
	r := scaleRun{n: n}
	prefix := fmt.Sprintf("n%d", n)
	say("scale %d: creating %d slices over %d classes and %d tenants (%d writers)...", n, n, scaleClasses, scaleTenants, scaleWriters)
	start := time.Now()
	if err := createScaleSlices(ctx, cp.Client, n, 0, n, prefix); err != nil {
		return r, err
	}
	r.created = time.Since(start)
	say("scale %d: created in %s", n, round(r.created))

	end := t.loads.start(fmt.Sprintf("scale %d", n))
	defer end()
	say("scale %d: a leader deciding them...", n)
	election := "bench-scale-" + prefix
	leader, err := startReplica("leader-"+prefix, cfgFile, scaleChildSpec{Size: n, Serve: n, Want: n, Election: election, Warmup: true, Measure: true})
	if err != nil {
		return r, err
	}
	defer leader.close()
	evs, err := awaitAll(leader, decideTimeout(n), evStart, evElected, evSynced, evFirst, evDecided, evEvaluated, evMemory)
	if err != nil {
		return r, err
	}
	t0 := evs[evStart].at()
	r.elected, r.synced = evs[evElected].at().Sub(t0), evs[evSynced].at().Sub(t0)
	r.first, r.decided = evs[evFirst].at().Sub(t0), evs[evDecided].at().Sub(t0)
	r.mem = evs[evMemory]
	if r.mem.Cached != n {
		return r, fmt.Errorf("scale %d: the leader caches %d slices", n, r.mem.Cached)
	}
	say("scale %d: all decided %s after the manager's start", n, ms(r.decided))

	modes := []bool{true}
	if f.scaleCold {
		modes = append(modes, false)
	}
	current, served := leader, n
	for i, warm := range modes {
		tk, next, err := takeOver(ctx, cp, f, current, n, served, i, warm, election, cfgFile)
		if err != nil {
			return r, err
		}
		defer next.close()
		r.takeovers = append(r.takeovers, tk)
		current, served = next, served+f.scaleFresh
	}
	current.stop()
	return r, current.wait(time.Minute)
}

// takeOver starts a standby (EnableWarmup set to warm) beside the leader
// serving served slices, stops the leader once the standby waits for the
// Lease, creates f.scaleFresh fresh slices, and times the standby's
// takeover from the leader's stop. It returns the standby, which leads.
func takeOver(ctx context.Context, cp *controlplane.ControlPlane, f flags, leader *replicaProc, n, served, round int, warm bool, election, cfgFile string) (takeover, *replicaProc, error) {
	tk := takeover{warmup: warm}
	mode := map[bool]string{true: "with", false: "without"}[warm]
	say("scale %d: a standby %s EnableWarmup...", n, mode)
	name := fmt.Sprintf("standby-n%d-%d", n, round)
	sb, err := startReplica(name, cfgFile, scaleChildSpec{Size: n, Serve: served + f.scaleFresh, Want: f.scaleFresh, Election: election, Warmup: warm, Standby: true})
	if err != nil {
		return tk, nil, err
	}
	tk.ready, err = sb.await(evReady, decideTimeout(n))
	if err != nil {
		sb.close()
		return tk, nil, err
	}
	if tk.ready.SliceRead != warm {
		sb.close()
		if warm {
			return tk, nil, errors.New("the standby with EnableWarmup had not read slices before it led")
		}
		return tk, nil, errors.New("the standby without EnableWarmup read slices before it led")
	}
	say("scale %d: stopping the leader; %d fresh slices...", n, f.scaleFresh)
	stopped := leader.stop()
	if err := createScaleSlices(ctx, cp.Client, n, n+round*f.scaleFresh, f.scaleFresh, fmt.Sprintf("n%d-fresh", n)); err != nil {
		sb.close()
		return tk, nil, err
	}
	evs, err := awaitAll(sb, decideTimeout(served), evElected, evFirst, evDecided, evEvaluated)
	if err != nil {
		sb.close()
		return tk, nil, err
	}
	if err := leader.wait(time.Minute); err != nil {
		sb.close()
		return tk, nil, err
	}
	tk.toLeader = evs[evElected].at().Sub(stopped)
	tk.toFirst = evs[evFirst].at().Sub(stopped)
	tk.toAll = evs[evDecided].at().Sub(stopped)
	tk.toEvaluated = evs[evEvaluated].at().Sub(stopped)
	tk.leaderExit = leader.exitAt.Sub(stopped)
	say("scale %d: %s EnableWarmup, the fresh slices decided %s after the leader's stop", n, mode, ms(tk.toAll))
	return tk, sb, nil
}

// awaitAll awaits each event of p in turn, each within timeout.
func awaitAll(p *replicaProc, timeout time.Duration, events ...string) (map[string]scaleEvent, error) {
	out := map[string]scaleEvent{}
	for _, e := range events {
		ev, err := p.await(e, timeout)
		if err != nil {
			return nil, err
		}
		out[e] = ev
	}
	return out, nil
}

// scaleSection is the scale phase's table: a column per size, so that the
// per-slice figures can be read across.
func scaleSection(runs []scaleRun, empty scaleEvent, fresh int) section {
	s := section{title: fmt.Sprintf("SCALE (one replica, its slices over %d classes and %d tenants)", scaleClasses, scaleTenants), header: []string{"METRIC"}}
	for _, r := range runs {
		s.header = append(s.header, fmt.Sprintf("N=%d", r.n))
	}
	row := func(metric string, cell func(r scaleRun) string) {
		cells := []string{metric}
		for _, r := range runs {
			cells = append(cells, cell(r))
		}
		s.rows = append(s.rows, cells)
	}
	// growth adds, with several sizes, a row of what each size adds per
	// slice over the one before: fixed costs (the manager's own, the
	// empty manager's differences from a leader's) cancel out.
	growth := func(metric string, cell func(prev, r scaleRun) string) {
		if len(runs) < 2 {
			return
		}
		cells := []string{metric, "—"}
		for i := 1; i < len(runs); i++ {
			cells = append(cells, cell(runs[i-1], runs[i]))
		}
		s.rows = append(s.rows, cells)
	}
	perSlice := func(d time.Duration, n int) string { return fmt.Sprintf("%.0f µs", micros(d)/float64(n)) }
	row("slices created, create + status PUT (not measured below)", func(r scaleRun) string {
		return fmt.Sprintf("%s (%.0f/s)", round(r.created), float64(r.n)/r.created.Seconds())
	})
	row("leader: manager start → elected / slice cache synced", func(r scaleRun) string { return ms(r.elected) + " / " + ms(r.synced) })
	row("leader: manager start → first decision", func(r scaleRun) string { return ms(r.first) })
	row("leader: manager start → all N decided", func(r scaleRun) string { return ms(r.decided) })
	row("  per slice", func(r scaleRun) string { return perSlice(r.decided, r.n) })
	growth("  per slice added, from the previous size", func(p, r scaleRun) string {
		return fmt.Sprintf("%.0f µs", marginal(micros(p.decided), micros(r.decided), p.n, r.n))
	})
	row("  decisions/s, first → all", func(r scaleRun) string {
		return fmt.Sprintf("%.0f", float64(r.n-1)/max(r.decided-r.first, time.Millisecond).Seconds())
	})
	row("leader, all decided: heap (HeapInuse after GC) / RSS / peak RSS", func(r scaleRun) string {
		return fmt.Sprintf("%s / %s / %s", mib(r.mem.Heap), mib(r.mem.RSS), mib(r.mem.Peak))
	})
	row("  bytes per cached slice: heap / RSS / peak RSS (− empty manager's)", func(r scaleRun) string {
		return fmt.Sprintf("%.0f / %.0f / %.0f", bytesPerSlice(r.mem.Heap, empty.Heap, r.n), bytesPerSlice(r.mem.RSS, empty.RSS, r.n), bytesPerSlice(r.mem.Peak, empty.Peak, r.n))
	})
	growth("  bytes per slice added, from the previous size: heap / RSS / peak RSS", func(p, r scaleRun) string {
		at := func(f func(scaleEvent) uint64) float64 {
			return marginal(float64(f(p.mem)), float64(f(r.mem)), p.n, r.n)
		}
		return fmt.Sprintf("%.0f / %.0f / %.0f", at(func(e scaleEvent) uint64 { return e.Heap }), at(func(e scaleEvent) uint64 { return e.RSS }), at(func(e scaleEvent) uint64 { return e.Peak }))
	})
	for _, warm := range []bool{true, false} {
		mode := map[bool]string{true: "with", false: "without"}[warm]
		tk := func(r scaleRun) (takeover, bool) {
			for _, t := range r.takeovers {
				if t.warmup == warm {
					return t, true
				}
			}
			return takeover{}, false
		}
		cell := func(f func(takeover) string) func(scaleRun) string {
			return func(r scaleRun) string {
				t, ok := tk(r)
				if !ok {
					return "—"
				}
				return f(t)
			}
		}
		if _, ok := tk(runs[0]); !ok && !warm {
			// -scale-cold=false: no row for a takeover not run.
			continue
		}
		row(fmt.Sprintf("standby %s EnableWarmup, before it leads: heap / RSS", mode), cell(func(t takeover) string {
			return fmt.Sprintf("%s / %s", mib(t.ready.Heap), mib(t.ready.RSS))
		}))
		row(fmt.Sprintf("takeover %s EnableWarmup: leader's stop → standby leads", mode), cell(func(t takeover) string { return ms(t.toLeader) }))
		row("  → first fresh slice decided", cell(func(t takeover) string { return ms(t.toFirst) }))
		// The lease's retry period (up to 500 ms) falls on both alike; what
		// warmup changes starts once the standby leads.
		row("  standby leads → first fresh slice decided", cell(func(t takeover) string { return ms(t.toFirst - t.toLeader) }))
		row(fmt.Sprintf("  → all %d fresh decided", fresh), cell(func(t takeover) string { return ms(t.toAll) }))
		row("  → every slice re-evaluated (N + fresh)", cell(func(t takeover) string { return ms(t.toEvaluated) }))
		row("  old leader's exit after its stop", cell(func(t takeover) string { return ms(t.leaderExit) }))
	}
	return s
}
