package integration

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Metering on a real API server, with Liqo's QuotaCreator: the counters
// are checked against what the test itself observes of the slices (their
// Accepted grants and Quotas, at the moment its own watches deliver them),
// integrated by the test, not read from the SDK.

// meterSeries reads one series of reg: metric for budget, consumer and
// cpu; ok is false when it is not exported.
func meterSeries(t *testing.T, reg *prometheus.Registry, metric, budgetName, consumer string) (v float64, ok bool) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["budget"] != budgetName || l["consumer"] != consumer || l["resource"] != "cpu" {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// cpuSeconds is a consumer's sliceclass_consumer_granted_seconds_total
// for cpu, read at the moment it returns (the midpoint of the scrape).
type reading struct {
	at time.Time
	v  float64
}

func cpuSeconds(t *testing.T, reg *prometheus.Registry, budgetName, consumer string) reading {
	t.Helper()
	before := time.Now()
	v, ok := meterSeries(t, reg, "sliceclass_consumer_granted_seconds_total", budgetName, consumer)
	after := time.Now()
	require.True(t, ok, "%s's counter is exported", consumer)
	return reading{at: before.Add(after.Sub(before) / 2), v: v}
}

// holdsWatch is the test's own record of what each slice of some
// namespaces holds, as the books count it (the larger of its last Accepted
// grant and its own Quota, while it exists), with the time its watches
// delivered each change.
type holdsWatch struct {
	mu     sync.Mutex
	events []holdEvent
}

type holdEvent struct {
	at  time.Time
	typ watch.EventType
	obj client.Object
}

func watchHolds(t *testing.T, nss ...string) *holdsWatch {
	t.Helper()
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w := &holdsWatch{}
	var done sync.WaitGroup
	for _, ns := range nss {
		for _, list := range []client.ObjectList{&authv1beta1.ResourceSliceList{}, &offloadingv1beta1.QuotaList{}, &offloadingv1beta1.ShadowPodList{}} {
			wi, err := wc.Watch(ctx, list, client.InNamespace(ns))
			require.NoError(t, err)
			done.Add(1)
			go func() {
				defer done.Done()
				for ev := range wi.ResultChan() {
					obj, ok := ev.Object.(client.Object)
					if !ok {
						continue
					}
					w.mu.Lock()
					w.events = append(w.events, holdEvent{at: time.Now(), typ: ev.Type, obj: obj})
					w.mu.Unlock()
				}
			}()
		}
	}
	t.Cleanup(func() { cancel(); done.Wait() })
	return w
}

// cpuSeconds integrates, per consumer (consumerOf maps a namespace to it),
// what the slices held from from to to, in core-seconds.
func (w *holdsWatch) cpuSeconds(consumerOf map[string]string, from, to time.Time) map[string]float64 {
	w.mu.Lock()
	events := append([]holdEvent(nil), w.events...)
	w.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].at.Before(events[j].at) })
	type held struct {
		ns    string
		grant resource.Quantity
	}
	slices := map[types.UID]*held{}
	quotas := map[types.UID]resource.Quantity{} // by owner
	out := map[string]float64{}
	last := from
	advance := func(until time.Time) {
		if until.Before(from) {
			return
		}
		if until.After(to) {
			until = to
		}
		if d := until.Sub(last).Seconds(); d > 0 {
			for uid, s := range slices {
				h := s.grant
				if q, ok := quotas[uid]; ok && q.Cmp(h) > 0 {
					h = q
				}
				out[consumerOf[s.ns]] += h.AsApproximateFloat64() * d
			}
			last = until
		}
	}
	for _, ev := range events {
		advance(ev.at)
		switch o := ev.obj.(type) {
		case *authv1beta1.ResourceSlice:
			if ev.typ == watch.Deleted {
				delete(slices, o.UID)
				continue
			}
			s := slices[o.UID]
			if s == nil {
				s = &held{ns: o.Namespace}
				slices[o.UID] = s
			}
			if conditions.IsAccepted(o) {
				s.grant = o.Status.Resources[corev1.ResourceCPU]
			}
		case *offloadingv1beta1.Quota:
			owner := metav1.GetControllerOf(o)
			if owner == nil {
				continue
			}
			if ev.typ == watch.Deleted {
				delete(quotas, owner.UID)
				continue
			}
			quotas[owner.UID] = o.Spec.Resources[corev1.ResourceCPU]
		}
	}
	advance(to)
	return out
}

// inUseSeconds integrates, per consumer, what the running ShadowPods of
// its slices' Quota users were charged (their containers' CPU requests)
// from from to to, in core-seconds: a pod counts from its creation until
// it ends (Succeeded, Failed) or is deleted, as Liqo's webhook and the
// books count it.
func (w *holdsWatch) inUseSeconds(consumerOf map[string]string, from, to time.Time) map[string]float64 {
	w.mu.Lock()
	events := append([]holdEvent(nil), w.events...)
	w.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].at.Before(events[j].at) })
	type pod struct {
		user string
		cpu  resource.Quantity
	}
	pods := map[types.UID]pod{}
	userOf := map[string]string{} // a Quota's user: its namespace's consumer
	out := map[string]float64{}
	last := from
	advance := func(until time.Time) {
		if until.Before(from) {
			return
		}
		if until.After(to) {
			until = to
		}
		if d := until.Sub(last).Seconds(); d > 0 {
			for _, p := range pods {
				if c, ok := userOf[p.user]; ok {
					out[c] += p.cpu.AsApproximateFloat64() * d
				}
			}
			last = until
		}
	}
	for _, ev := range events {
		advance(ev.at)
		switch o := ev.obj.(type) {
		case *offloadingv1beta1.Quota:
			if ev.typ != watch.Deleted {
				userOf[o.Spec.User] = consumerOf[o.Namespace]
			}
		case *offloadingv1beta1.ShadowPod:
			if ev.typ == watch.Deleted || o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
				delete(pods, o.UID)
				continue
			}
			var cpu resource.Quantity
			for _, c := range o.Spec.Pod.Containers {
				cpu.Add(c.Resources.Requests[corev1.ResourceCPU])
			}
			pods[o.UID] = pod{user: o.Labels["liqo.io/creator-user"], cpu: cpu}
		}
	}
	advance(to)
	return out
}

// Two consumers, known grants changed at known times over tens of
// seconds, with a reclaim and a deletion inside the window: spot's slice
// holds 8 of 10; gold (higher priority) asks 6 and spot is shrunk to 4 by a
// reclaim; gold's slice is deleted; spot may grow back. Each consumer's
// counter rises, over the window, by what the test integrates from its own
// watches of the slices and their Quotas, within 1%.
func TestMeteringCountsWhatEachConsumerHeld(t *testing.T) {
	cp.Require(t)
	const (
		id    = "meter"
		spotC = "cluster-meter-spot"
		goldC = "cluster-meter-gold"
		// phase is long enough that what neither clock can see apart (the
		// books count a grant from its write, the test's watch from the
		// event it receives: ~140 ms apart at load 16 on 2 cores) stays
		// inside 1% of gold's life: 12 s did not (1.12%, a red CI run).
		phase = 20 * time.Second
	)
	nsS := tenantNamespace(t, id+"-spot", spotC)
	nsG := tenantNamespace(t, id+"-gold", goldC)
	consumerOf := map[string]string{nsS: spotC, nsG: goldC}
	hw := watchHolds(t, nsS, nsG)
	b, err := budget.New(id, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, budget.WithPreemption())
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		if err := resourceslice.AddToManager(mgr, id+"-spot", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(0), resourceslice.WithMetricsRegisterer(reg)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, id+"-gold", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithPriority(100), resourceslice.WithMetricsRegisterer(reg))
	})

	create(t, sliceIn(nsS, "s", id+"-spot", slicetest.WithConsumer(spotC), slicetest.WithRequest(corev1.ResourceCPU, "8")))
	testkit.Eventually(t, "spot Accepted with 8 and its Quota at 8", func() bool {
		return conditions.IsAccepted(get(t, nsS, "s")) && quotaIs(nsS, "s", "8")()
	})
	testkit.Eventually(t, "spot's 8 exported", func() bool {
		v, ok := meterSeries(t, reg, "sliceclass_consumer_granted", id, spotC)
		return ok && v == 8
	})
	_, goldSeries := meterSeries(t, reg, "sliceclass_consumer_granted", id, goldC)
	assert.False(t, goldSeries, "a consumer that held nothing has no series")
	spot0 := cpuSeconds(t, reg, id, spotC)

	time.Sleep(phase)
	create(t, sliceIn(nsG, "g", id+"-gold", slicetest.WithConsumer(goldC), slicetest.WithRequest(corev1.ResourceCPU, "6")))
	testkit.Eventually(t, "spot reclaimed to 4 and gold Accepted with 6", func() bool {
		rs := get(t, nsS, "s")
		c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Reason == budget.ReasonReclaimed && rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")) == 0 &&
			conditions.IsAccepted(get(t, nsG, "g")) && quotaIs(nsG, "g", "6")()
	})
	time.Sleep(phase)
	require.NoError(t, cp.Client.Delete(context.Background(), get(t, nsG, "g")))
	testkit.Eventually(t, "gold's slice gone and its series at 0", func() bool {
		v, ok := meterSeries(t, reg, "sliceclass_consumer_granted", id, goldC)
		return ok && v == 0
	})
	time.Sleep(phase)
	spot1, gold1 := cpuSeconds(t, reg, id, spotC), cpuSeconds(t, reg, id, goldC)

	want := hw.cpuSeconds(consumerOf, spot0.at, spot1.at)
	wantGold := hw.cpuSeconds(consumerOf, spot0.at, gold1.at)[goldC]
	t.Logf("spot: counted %.3f core-s, observed %.3f; gold: counted %.3f, observed %.3f", spot1.v-spot0.v, want[spotC], gold1.v, wantGold)
	require.Greater(t, want[spotC], 4*3*phase.Seconds()*0.9, "spot held at least 4 throughout")
	require.Greater(t, wantGold, 6*phase.Seconds()*0.9, "gold held 6 for a phase")
	assert.InEpsilon(t, want[spotC], spot1.v-spot0.v, 0.01, "spot's core-seconds over the window")
	assert.InEpsilon(t, wantGold, gold1.v, 0.01, "gold's core-seconds: its whole life in the window")
}

// A restart resets the counters (a new process counts from zero), and
// increase() across it, computed as Prometheus does (a drop is a reset),
// is what was held while either process led.
func TestMeteringAcrossARestart(t *testing.T) {
	cp.Require(t)
	const (
		id = "meter-restart"
		c  = "cluster-meter-restart"
	)
	ns := tenantNamespace(t, id, c)
	create(t, sliceIn(ns, "s", id, slicetest.WithConsumer(c), slicetest.WithRequest(corev1.ResourceCPU, "4")))
	start := func() (*prometheus.Registry, *testkit.Manager, time.Time) {
		b, err := budget.New(id, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
		require.NoError(t, err)
		reg := prometheus.NewRegistry()
		at := time.Now()
		m := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
			if err := withLiqoQuotas(mgr); err != nil {
				return err
			}
			return resourceslice.AddToManager(mgr, id, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithMetricsRegisterer(reg))
		})
		testkit.Eventually(t, "the slice's 4 exported", func() bool {
			v, ok := meterSeries(t, reg, "sliceclass_consumer_granted", id, c)
			return ok && v == 4
		})
		return reg, m, at
	}
	sample := func(reg *prometheus.Registry, n int) []reading {
		var out []reading
		for i := range n {
			if i > 0 {
				time.Sleep(2 * time.Second)
			}
			out = append(out, cpuSeconds(t, reg, id, c))
		}
		return out
	}

	reg1, m1, _ := start()
	first := sample(reg1, 4)
	m1.Stop()
	_, exported := meterSeries(t, reg1, "sliceclass_consumer_granted_seconds_total", id, c)
	assert.False(t, exported, "a stopped manager exports no series")
	reg2, _, started2 := start()
	second := sample(reg2, 4)

	assert.Less(t, second[0].v, first[len(first)-1].v, "the new process's counter starts again from zero")
	var values []float64
	for _, r := range append(append([]reading(nil), first...), second...) {
		values = append(values, r.v)
	}
	got := promIncrease(values)
	span1 := first[len(first)-1].at.Sub(first[0].at).Seconds()
	lo := 4 * (span1 + second[len(second)-1].at.Sub(second[0].at).Seconds())
	hi := 4 * (span1 + second[len(second)-1].at.Sub(started2).Seconds())
	t.Logf("increase %.3f core-s; held while sampled: between %.3f and %.3f", got, lo, hi)
	assert.GreaterOrEqual(t, got, lo*0.99, "increase() counts what was held between the samples of each process")
	assert.LessOrEqual(t, got, hi*1.01, "and nothing held before the second process started")
}

// promIncrease is Prometheus' increase() over samples, without its
// extrapolation to the range's edges: the sum of the rises, where a drop
// is a counter reset and the value after it is its rise from zero.
func promIncrease(samples []float64) float64 {
	var sum float64
	for i := 1; i < len(samples); i++ {
		if d := samples[i] - samples[i-1]; d >= 0 {
			sum += d
		} else {
			sum += samples[i]
		}
	}
	return sum
}

// Leader only: of two replicas of one election, the standby exports no
// consumer series while the leader does; when the leader stops, the
// standby is elected and exports the consumer's counter from zero (a
// failover is a reset, as a restart is).
func TestMeteringOnTheLeaderOnly(t *testing.T) {
	cp.Require(t)
	const (
		id = "meter-leader"
		c  = "cluster-meter-leader"
	)
	ns := tenantNamespace(t, id, c)
	leases := testkit.Namespace(t, cp, id+"-leases")
	create(t, sliceIn(ns, "s", id, slicetest.WithConsumer(c), slicetest.WithRequest(corev1.ResourceCPU, "3")))
	opts := testkit.ManagerOptions(t, cp.Scheme)
	opts.LeaderElection, opts.LeaderElectionNamespace, opts.LeaderElectionID = true, leases, id
	opts.LeaderElectionReleaseOnCancel = true
	replica := func() (*prometheus.Registry, *testkit.Manager) {
		b, err := budget.New(id, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
		require.NoError(t, err)
		reg := prometheus.NewRegistry()
		m := testkit.StartManagerWith(t, cp.Config, opts, func(mgr manager.Manager) error {
			return resourceslice.AddToManager(mgr, id, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithMetricsRegisterer(reg))
		})
		return reg, m
	}
	exports := func(reg *prometheus.Registry) func() bool {
		return func() bool {
			v, ok := meterSeries(t, reg, "sliceclass_consumer_granted", id, c)
			return ok && v == 3
		}
	}
	regA, a := replica()
	testkit.Eventually(t, "the leader exports the consumer's 3 CPU", exports(regA))
	regB, _ := replica()
	testkit.Consistently(t, 3*time.Second, "the standby exports no consumer series", func() bool {
		_, ok := meterSeries(t, regB, "sliceclass_consumer_granted_seconds_total", id, c)
		return !ok
	})
	last := cpuSeconds(t, regA, id, c)
	a.Stop()
	testkit.Eventually(t, "the standby, elected, exports the consumer's 3 CPU", exports(regB))
	first := cpuSeconds(t, regB, id, c)
	assert.Less(t, first.v, last.v, "the new leader's counter starts from zero")
	assert.Positive(t, first.v, "and counts from when it counted the slice")
}

// What a consumer's pods use, over time: its slice holds 4; a pod of 1 CPU
// runs, then one of 2 beside it, then the first is deleted. The in-use
// counter rises, over the window, by what the test integrates from its own
// watch of the ShadowPods, within 1%; the granted counter by the 4 held.
func TestMeteringCountsWhatPodsUse(t *testing.T) {
	cp.Require(t)
	const (
		id    = "meter-pods"
		c     = "cluster-meter-pods"
		phase = 8 * time.Second
	)
	ns := tenantNamespace(t, id, c)
	offloaded := testkit.Namespace(t, cp, id+"-offloaded")
	hw := watchHolds(t, ns, offloaded)
	b, err := budget.New(id, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, id, accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithoutTenantRule(), resourceslice.WithMetricsRegisterer(reg))
	})
	create(t, sliceIn(ns, "s", id, slicetest.WithConsumer(c), slicetest.WithRequest(corev1.ResourceCPU, "4")))
	testkit.Eventually(t, "the slice Accepted with 4, its Quota at 4 and exported", func() bool {
		v, ok := meterSeries(t, reg, "sliceclass_consumer_granted", id, c)
		return quotaIs(ns, "s", "4")() && ok && v == 4
	})
	user := quotaUser(t, ns)
	inUse := func() reading {
		before := time.Now()
		v, ok := meterSeries(t, reg, "sliceclass_consumer_in_use_seconds_total", id, c)
		after := time.Now()
		require.True(t, ok)
		return reading{at: before.Add(after.Sub(before) / 2), v: v}
	}
	inUseIs := func(want float64) func() bool {
		return func() bool {
			v, ok := meterSeries(t, reg, "sliceclass_consumer_in_use", id, c)
			return ok && v == want
		}
	}
	r0, g0 := inUse(), cpuSeconds(t, reg, id, c)
	p1 := runShadowPod(t, offloaded, "p1", user, "1")
	testkit.Eventually(t, "1 CPU in use", inUseIs(1))
	time.Sleep(phase)
	runShadowPod(t, offloaded, "p2", user, "2")
	testkit.Eventually(t, "3 CPU in use", inUseIs(3))
	time.Sleep(phase)
	require.NoError(t, cp.Client.Delete(context.Background(), p1))
	testkit.Eventually(t, "2 CPU in use", inUseIs(2))
	time.Sleep(phase)
	r1, g1 := inUse(), cpuSeconds(t, reg, id, c)

	want := hw.inUseSeconds(map[string]string{ns: c}, r0.at, r1.at)[c]
	t.Logf("in use: counted %.3f core-s, observed %.3f", r1.v-r0.v, want)
	require.Greater(t, want, (1+3+2)*phase.Seconds()*0.9, "the pods ran through the phases")
	assert.InEpsilon(t, want, r1.v-r0.v, 0.01, "the pods' core-seconds over the window")
	assert.InEpsilon(t, 4*g1.at.Sub(g0.at).Seconds(), g1.v-g0.v, 0.01, "the slice held its 4 (its pods used less) throughout")
}
