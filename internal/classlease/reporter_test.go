package classlease

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The reporter's check, step by step on a fake client and a clock the test
// moves: what it flags, when, how often, and what it exports. The same
// behaviour on a real API server is in test/integration/classset_test.go.

const reporterNS = "sliceclass-system"

// reporterEvent is one event the reporter recorded.
type reporterEvent struct {
	regarding, eventType, reason, note string
}

// eventLog records events (events.EventRecorder).
type eventLog struct {
	mu     sync.Mutex
	events []reporterEvent
}

func (l *eventLog) Eventf(regarding runtime.Object, _ runtime.Object, eventType, reason, _, note string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := ""
	if o, ok := regarding.(client.Object); ok {
		name = o.GetName()
	}
	l.events = append(l.events, reporterEvent{regarding: name, eventType: eventType, reason: reason, note: fmt.Sprintf(note, args...)})
}

// about returns the events regarding the named slice.
func (l *eventLog) about(name string) []reporterEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []reporterEvent
	for _, e := range l.events {
		if e.regarding == name {
			out = append(out, e)
		}
	}
	return out
}

func (l *eventLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// reporterFixture is a reporter wired to a fake client, its own event log
// and its own metrics registry.
type reporterFixture struct {
	u      *Reporter
	c      client.Client
	events *eventLog
	reg    *prometheus.Registry
	// now is the reporter's clock; onSliceList, when set, runs as the
	// reporter lists its slices (the world moving during a check).
	now         time.Time
	onSliceList func()
}

func newReporterFixture(t *testing.T, after time.Duration, objs ...client.Object) *reporterFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, authv1beta1.AddToScheme(scheme))
	require.NoError(t, coordinationv1.AddToScheme(scheme))
	f := &reporterFixture{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*authv1beta1.ResourceSliceList); ok && f.onSliceList != nil {
				f.onSliceList()
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	reg := prometheus.NewRegistry()
	count, oldest := NewGauges()
	require.NoError(t, reg.Register(count))
	require.NoError(t, reg.Register(oldest))
	log := &eventLog{}
	replicated, err := labels.Parse("liqo.io/originID,liqo.io/replicated=true")
	require.NoError(t, err)
	u, err := NewReporter(ReporterConfig{
		Slices: c, Leases: c, Recorder: log, Synced: func(context.Context) bool { return true },
		ClassOf: func(rs *authv1beta1.ResourceSlice) string { return string(rs.Spec.Class) }, Replicated: replicated,
		Namespace: reporterNS, After: after, Count: count, Oldest: oldest,
		Clock: func() time.Time { return f.now },
	})
	require.NoError(t, err)
	f.u, f.c, f.events, f.reg = u, c, log, reg
	return f
}

// check runs one check with the clock at now.
func (f *reporterFixture) check(t *testing.T, now time.Time) {
	t.Helper()
	f.now = now
	require.NoError(t, f.u.Check(context.Background()))
}

// gauge returns the value of the metric for class, and whether the series
// exists at all.
func (f *reporterFixture) gauge(t *testing.T, metric, class string) (float64, bool) {
	t.Helper()
	families, err := f.reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == class {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// series counts the reporter's series, of both metrics.
func (f *reporterFixture) series(t *testing.T) int {
	t.Helper()
	families, err := f.reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range families {
		if mf.GetName() == MetricUnservedSlices || mf.GetName() == MetricUnservedOldest {
			n += len(mf.GetMetric())
		}
	}
	return n
}

// unserved returns sliceclass_unserved_slices{class}, 0 when absent.
func (f *reporterFixture) unserved(t *testing.T, class string) float64 {
	t.Helper()
	v, _ := f.gauge(t, MetricUnservedSlices, class)
	return v
}

// replicatedSlice is a slice of class as Liqo replicates it on the
// provider, created at created.
func replicatedSlice(name, class string, created time.Time) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "liqo-tenant-consumer", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{"liqo.io/originID": "consumer", "liqo.io/replicated": "true"},
		},
		Spec: authv1beta1.ResourceSliceSpec{Class: authv1beta1.ResourceSliceClass(class)},
	}
}

// classLeaseObj is a class Lease held by holder, renewed at renew, live for
// d (nil: the field is unset).
func classLeaseObj(class, holder string, renew time.Time, d *int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: Name(class), Namespace: reporterNS, Labels: map[string]string{Label: class}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), RenewTime: ptr.To(metav1.NewMicroTime(renew)), LeaseDurationSeconds: d,
		},
	}
}

func TestUnservedReporterFlagsAfterDelayOnce(t *testing.T) {
	const after = 2 * time.Second
	t0 := time.Now().Truncate(time.Second)
	deleting := replicatedSlice("deleting", "orphan", t0.Add(-time.Hour))
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	deleting.Finalizers = []string{"liqo.io/test"}
	otherNS := classLeaseObj("elsewhere", "pod-x", t0, ptr.To(int32(40)))
	otherNS.Namespace = "not-the-reporters"
	f := newReporterFixture(t, after,
		replicatedSlice("orphan-1", "orphan", t0.Add(-time.Hour)),
		replicatedSlice("orphan-2", "orphan", t0.Add(-time.Minute)),
		replicatedSlice("served", "served", t0),
		replicatedSlice("expired", "expired", t0),
		replicatedSlice("elsewhere", "elsewhere", t0),
		replicatedSlice("no-class", "", t0),
		replicatedSlice("liqo-default", "default", t0),
		deleting,
		classLeaseObj("served", "pod-a", t0, ptr.To(int32(40))),
		classLeaseObj("expired", "pod-b", t0.Add(-time.Hour), ptr.To(int32(5))),
		otherNS,
	)

	f.check(t, t0)
	f.check(t, t0.Add(after-time.Millisecond))
	assert.Zero(t, f.events.total(), "nothing is flagged before the delay: %+v", f.events.events)
	assert.Zero(t, f.unserved(t, "orphan"), "the gauge counts only slices unserved for longer than the delay")

	f.check(t, t0.Add(after))
	for name, class := range map[string]string{"orphan-1": "orphan", "orphan-2": "orphan", "expired": "expired", "elsewhere": "elsewhere"} {
		evs := f.events.about(name)
		if assert.Len(t, evs, 1, "slice %s: one event once the delay is over", name) {
			assert.Equal(t, corev1.EventTypeWarning, evs[0].eventType)
			assert.Equal(t, ReasonNoClassController, evs[0].reason)
			assert.Contains(t, evs[0].note, fmt.Sprintf("%q", class), "the event names the class")
		}
	}
	for _, name := range []string{"served", "no-class", "liqo-default", "deleting"} {
		assert.Empty(t, f.events.about(name), "slice %s must never be flagged", name)
	}
	assert.Equal(t, 2.0, f.unserved(t, "orphan"))
	assert.Equal(t, 1.0, f.unserved(t, "expired"), "a Lease past renewTime+leaseLeaseDurationSeconds does not serve")
	assert.Equal(t, 1.0, f.unserved(t, "elsewhere"), "only Leases in the reporter's namespace count")
	oldest, _ := f.gauge(t, MetricUnservedOldest, "orphan")
	assert.InDelta(t, time.Hour.Seconds()+after.Seconds(), oldest, 0.001, "the oldest unserved slice's age, from its creation")
	for _, class := range []string{"served", "", "default"} {
		_, ok := f.gauge(t, MetricUnservedSlices, class)
		assert.False(t, ok, "no series for class %q, which is served", class)
	}

	before := f.events.total()
	f.check(t, t0.Add(after+time.Second))
	f.check(t, t0.Add(after+time.Minute))
	assert.Equal(t, before, f.events.total(), "a slice is flagged once, not at every check")
	assert.Equal(t, 2.0, f.unserved(t, "orphan"), "the gauge keeps counting while the slices wait")
}

// A slice created while a check lists (the list is slow on a loaded
// machine) is first seen at the time the list returns, not at the time the
// check began: its delay runs from when it existed, so it is never flagged,
// nor counted in the gauges, before it is the delay old.
func TestUnservedReporterDatesASliceAfterTheList(t *testing.T) {
	const after, listTook = 2 * time.Second, 300 * time.Millisecond
	t0 := time.Now().Truncate(time.Second)
	f := newReporterFixture(t, after)
	created := t0.Add(listTook)
	f.now = t0
	f.onSliceList = func() {
		// The check began at t0; the slice is created, and the list
		// returns, listTook later.
		f.now = created
		require.NoError(t, f.c.Create(context.Background(), replicatedSlice("slow-list", "orphan", created)))
		f.onSliceList = nil
	}
	require.NoError(t, f.u.Check(context.Background()))

	f.check(t, t0.Add(after))
	assert.Empty(t, f.events.about("slow-list"), "the slice is %s old: not yet flagged", after-listTook)
	assert.Zero(t, f.unserved(t, "orphan"), "nor counted")

	f.check(t, created.Add(after))
	assert.Len(t, f.events.about("slow-list"), 1, "flagged once the delay has passed since it was first seen")
	assert.Equal(t, 1.0, f.unserved(t, "orphan"))
}

// A controller appears for a flagged class: its series are deleted at the
// next check, with no event.
func TestUnservedReporterControllerAppears(t *testing.T) {
	const after = 2 * time.Second
	t0 := time.Now().Truncate(time.Second)
	f := newReporterFixture(t, after, replicatedSlice("late", "late", t0))
	f.check(t, t0)
	f.check(t, t0.Add(after))
	require.Equal(t, 1.0, f.unserved(t, "late"))
	require.Len(t, f.events.about("late"), 1)

	now := t0.Add(after + time.Second)
	require.NoError(t, f.c.Create(context.Background(), classLeaseObj("late", "pod-a", now, ptr.To(int32(40)))))
	f.check(t, now)
	for _, metric := range []string{MetricUnservedSlices, MetricUnservedOldest} {
		_, ok := f.gauge(t, metric, "late")
		assert.False(t, ok, "%s: the class is served now: its series is deleted", metric)
	}
	f.check(t, now.Add(time.Second))
	assert.Len(t, f.events.about("late"), 1, "no further event once served")

	// Its Lease expires (the controller died without deleting it): after
	// the delay again, the slice is flagged again.
	expiry := now.Add(40 * time.Second)
	f.check(t, expiry)
	assert.Zero(t, f.unserved(t, "late"), "not before the delay")
	f.check(t, expiry.Add(after))
	assert.Equal(t, 1.0, f.unserved(t, "late"), "an expired Lease serves nothing")
	assert.Len(t, f.events.about("late"), 2, "a class that loses its controller is reported again")
}

// A check that reads a Lease cache behind the API server finds no Lease
// for a class that is served; once the Lease shows, even expired, the
// slice counts as unserved only from its expiry: it is flagged the delay
// after that, not the delay after the first check that missed the Lease.
func TestUnservedReporterCountsFromTheLeasesExpiry(t *testing.T) {
	const after = 2 * time.Second
	t0 := time.Now().Truncate(time.Second)
	f := newReporterFixture(t, after, replicatedSlice("crash", "crash", t0))
	f.check(t, t0) // the Lease, renewed at t0 for 4s, is not in the cache yet
	f.check(t, t0.Add(time.Second))
	expiry := t0.Add(4 * time.Second)
	require.NoError(t, f.c.Create(context.Background(), classLeaseObj("crash", "pod-a", t0, ptr.To(int32(4)))))
	f.check(t, expiry.Add(300*time.Millisecond))
	assert.Empty(t, f.events.about("crash"), "the class was served until its Lease expired, 0.3s ago")
	assert.Zero(t, f.unserved(t, "crash"))
	f.check(t, expiry.Add(after))
	assert.Len(t, f.events.about("crash"), 1, "flagged the delay after the expiry")
	assert.Equal(t, 1.0, f.unserved(t, "crash"))
}

// A deleted slice leaves the gauge.
func TestUnservedReporterForgetsDeletedSlices(t *testing.T) {
	const after = time.Second
	t0 := time.Now().Truncate(time.Second)
	gone := replicatedSlice("gone", "gone", t0)
	f := newReporterFixture(t, after, gone)
	f.check(t, t0)
	f.check(t, t0.Add(after))
	require.Equal(t, 1.0, f.unserved(t, "gone"))
	require.NoError(t, f.c.Delete(context.Background(), gone))
	f.check(t, t0.Add(2*after))
	for _, metric := range []string{MetricUnservedSlices, MetricUnservedOldest} {
		_, ok := f.gauge(t, metric, "gone")
		assert.False(t, ok, "%s: a class with no slice left has no series", metric)
	}
}

// A consumer writes any spec.class it likes: slices of made-up classes,
// flagged and then deleted, leave no series behind, while a class that
// still has an unserved slice keeps its own.
func TestUnservedReporterDeletesSeriesOfGoneClasses(t *testing.T) {
	const after, n = time.Second, 200
	t0 := time.Now().Truncate(time.Second)
	objs := []client.Object{replicatedSlice("stays", "stays", t0)}
	for i := range n {
		objs = append(objs, replicatedSlice(fmt.Sprintf("made-up-%d", i), fmt.Sprintf("made-up-%d", i), t0))
	}
	f := newReporterFixture(t, after, objs...)
	f.check(t, t0)
	f.check(t, t0.Add(after))
	require.Equal(t, 2*(n+1), f.series(t), "every class flagged has its two series")

	for _, o := range objs[1:] {
		require.NoError(t, f.c.Delete(context.Background(), o))
	}
	f.check(t, t0.Add(2*after))
	assert.Equal(t, 2, f.series(t), "only the class with a slice left keeps its series")
	assert.Equal(t, 1.0, f.unserved(t, "stays"))
}

// The consumer's own slices (not replicated: created here, replicated to
// and decided by a provider elsewhere) are served there: the SDK's
// controllers leave them alone (ReplicatedSelector), and the reporter must
// not warn that nobody serves them.
func TestUnservedReporterIgnoresLocalSlices(t *testing.T) {
	const after = time.Second
	t0 := time.Now().Truncate(time.Second)
	local := replicatedSlice("outgoing", "remote-gold", t0)
	local.Labels = nil
	f := newReporterFixture(t, after, local)
	f.check(t, t0)
	f.check(t, t0.Add(after))
	assert.Empty(t, f.events.about("outgoing"), "an outgoing slice is served by its provider")
	assert.Zero(t, f.unserved(t, "remote-gold"))
}

func TestLeaseLive(t *testing.T) {
	now := time.Now()
	cases := map[string]struct {
		reason string
		lease  *coordinationv1.Lease
		want   bool
	}{
		"Fresh": {reason: "renewed now for 40s", lease: classLeaseObj("c", "pod", now, ptr.To(int32(40))), want: true},
		"JustBeforeExpiry": {reason: "renewed 39.9s ago for 40s",
			lease: classLeaseObj("c", "pod", now.Add(-39900*time.Millisecond), ptr.To(int32(40))), want: true},
		"AtExpiry": {reason: "renewTime+duration is now: expired",
			lease: classLeaseObj("c", "pod", now.Add(-40*time.Second), ptr.To(int32(40))), want: false},
		"ShortDuration": {reason: "a short leaseLeaseDurationSeconds is honoured",
			lease: classLeaseObj("c", "pod", now.Add(-10*time.Second), ptr.To(int32(5))), want: false},
		"DefaultDuration": {reason: "no leaseLeaseDurationSeconds: Duration applies",
			lease: classLeaseObj("c", "pod", now.Add(-Duration+time.Second), nil), want: true},
		"DefaultDurationExpired": {reason: "no leaseLeaseDurationSeconds: Duration applies",
			lease: classLeaseObj("c", "pod", now.Add(-Duration-time.Second), nil), want: false},
		"NoHolder": {reason: "a released Lease serves nothing",
			lease: func() *coordinationv1.Lease {
				l := classLeaseObj("c", "pod", now, ptr.To(int32(40)))
				l.Spec.HolderIdentity = nil
				return l
			}(), want: false},
		"EmptyHolder": {reason: "an empty holder serves nothing", lease: classLeaseObj("c", "", now, ptr.To(int32(40))), want: false},
		"NeverRenewed": {reason: "no renewTime",
			lease: func() *coordinationv1.Lease {
				l := classLeaseObj("c", "pod", now, ptr.To(int32(40)))
				l.Spec.RenewTime = nil
				return l
			}(), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Live(tc.lease, now), tc.reason)
		})
	}
}

func TestNewReporterRejectsBadSetup(t *testing.T) {
	cases := map[string]struct {
		reason    string
		namespace string
		after     time.Duration
	}{
		"NoNamespace":   {reason: "the class Leases live in a namespace", namespace: "", after: time.Second},
		"ZeroDelay":     {reason: "every slice is unserved for an instant", namespace: reporterNS, after: 0},
		"NegativeDelay": {reason: "a delay is positive", namespace: reporterNS, after: -time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewReporter(ReporterConfig{Namespace: tc.namespace, After: tc.after})
			assert.Error(t, err, tc.reason)
		})
	}
}
