package ledger_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// limited is a ledger "pool" with plenty of capacity, so that only the
// consumer limit (2 GPUs and 4 CPUs per consumer) can refuse, and class gold
// attached; silver is attached too, for limits across classes.
func limited(t *testing.T) (*ledger.Ledger, *wakes) {
	t.Helper()
	total := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100"),
		corev1.ResourceMemory: resource.MustParse("100Gi"),
		resourceGPU:           resource.MustParse("10"),
	}
	limit := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), resourceGPU: resource.MustParse("2")}
	l, w := newLedgerOpts(t, "pool", total, ledger.Options{ConsumerLimit: limit})
	require.NoError(t, l.Attach("silver", ledger.Class{}))
	return l, w
}

func gpuCPU(g, c string) corev1.ResourceList {
	return corev1.ResourceList{resourceGPU: resource.MustParse(g), corev1.ResourceCPU: resource.MustParse(c)}
}

func TestConsumerLimit(t *testing.T) {
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, l *ledger.Ledger)
		r      ledger.Request
		want   *ledger.Refusal
	}{
		"WithinLimit": {
			reason: "A consumer holding 1 GPU of its 2 may take one more.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "a", "A", gpus("1")) },
			r:      request("b", "A", at(1), gpus("1")),
		},
		"PastLimit": {
			reason: "A consumer at its limit is refused with ConsumerLimitReached, naming the consumer, what it holds and the limit.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "a", "A", gpus("2")) },
			r:      request("b", "A", at(1), gpus("1")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"NotAtItsLimit": {
			reason: "A consumer holding 1 GPU of its 2 and asking 2 more is not at its limit: the message says the ask would take it over (issue 42).",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "a", "A", gpus("1")) },
			r:      request("b", "A", at(1), gpus("2")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 2, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"SeveralResources": {
			reason: "Every short resource is named, sorted, each with what was asked and its limit (what the consumer holds moves: it is not in the message).",
			setup: func(_ *testing.T, l *ledger.Ledger) {
				holdAs(l, "a", "A", gpuCPU("1", "3"))
				holdAs(l, "c", "A", gpuCPU("1", "0"))
			},
			r: request("b", "A", at(1), gpuCPU("1", "2")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"cpu", "nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: cpu: asked 2, limit 4; nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"OnlyShortResourcesNamed": {
			reason: "A resource within the limit is not named.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "a", "A", gpuCPU("2", "1")) },
			r:      request("b", "A", at(1), gpuCPU("1", "1")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"OtherConsumer": {
			reason: "One consumer's holding does not count against another's limit.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "a", "A", gpus("2")) },
			r:      request("b", "B", at(1), gpus("2")),
		},
		"ResourceNotLimited": {
			reason: "The limit caps only the resources it names: memory is bounded by the total alone.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "a", "A", gpus("2")) },
			r:      request("b", "A", at(1), corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("90Gi")}),
		},
		"SingleOfferPastLimit": {
			reason: "A first slice asking more than the limit is refused: it would hold more than the limit alone.",
			r:      request("b", "A", at(1), gpus("3")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit: nvidia.com/gpu: asked 3, more than its limit 2 (it fits only if that limit is raised)`},
		},
		"CountsQuota": {
			reason: "Liqo's Quota for a slice that is not Accepted (any more) counts: it is enforced.",
			setup: func(_ *testing.T, l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", nil, consumer("A")))
				l.ObserveQuota(key("a"), uid("a"), "q", "", gpus("2"))
			},
			r: request("b", "A", at(1), gpus("1")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"CountsAssumptions": {
			reason: "An admission whose write the watch has not shown yet counts: a cold cache cannot grant past the limit.",
			setup: func(t *testing.T, l *ledger.Ledger) {
				admitted(t, []*ledger.Ledger{l}, request("a", "A", at(0), gpus("1")))
				admitted(t, []*ledger.Ledger{l}, request("c", "A", at(0), gpus("1")))
			},
			r: request("b", "A", at(1), gpus("1")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"DenyIsNotARelease": {
			reason: "A slice Denied after an acceptance still holds its grant (Liqo's Quota stays).",
			setup: func(_ *testing.T, l *ledger.Ledger) {
				holdAs(l, "a", "A", gpus("2"))
				l.ObserveSlice(slice("a", "2", gpus("2"), consumer("A"), denied))
			},
			r: request("b", "A", at(1), gpus("1")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"AcrossClasses": {
			reason: "The limit applies across every class drawing from the ledger.",
			setup: func(_ *testing.T, l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", gpus("2"), consumer("A"), inClass("silver")))
			},
			r: request("b", "A", at(1), gpus("1")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`},
		},
		"SameOfferAgain": {
			reason: "A slice that holds its offer is admitted for it again: only the increase counts.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "b", "A", gpus("2")) },
			r:      request("b", "A", at(1), gpus("2")),
		},
		"IncreasePastLimit": {
			reason: "A slice that holds 2 asking 3 would make its consumer hold 3.",
			setup:  func(_ *testing.T, l *ledger.Ledger) { holdAs(l, "b", "A", gpus("2")) },
			r:      request("b", "A", at(1), gpus("3")),
			want: &ledger.Refusal{Budget: "pool", Reason: ledger.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
				Message: `budget pool: consumer "A" would go over its limit: nvidia.com/gpu: asked 3, more than its limit 2 (it fits only if that limit is raised)`},
		},
		"ConsumerMoved": {
			reason: "A slice observed under another consumer counts for that one only.",
			setup: func(_ *testing.T, l *ledger.Ledger) {
				holdAs(l, "a", "A", gpus("2"))
				l.ObserveSlice(slice("a", "2", gpus("2"), consumer("B")))
			},
			r: request("b", "A", at(1), gpus("2")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := limited(t)
			if tc.setup != nil {
				tc.setup(t, l)
			}
			ls := []*ledger.Ledger{l}
			used := l.Used()

			check := ledger.CheckAll(ls, tc.r)
			assert.Empty(t, cmp.Diff(tc.want, check), "%s\nCheckAll (-want +got)", tc.reason)
			assertList(t, used, l.Used(), "CheckAll holds nothing")
			assert.Zero(t, l.WaitingCount(), "CheckAll joins no line")

			as, refusal := ledger.AdmitAll(ls, tc.r)
			assert.Empty(t, cmp.Diff(tc.want, refusal), "%s\nAdmitAll (-want +got)", tc.reason)
			if tc.want != nil {
				assert.Nil(t, as)
				assertList(t, used, l.Used(), "a refusal holds nothing")
				assert.Equal(t, []string{"gold/ns/" + tc.r.Key.Name}, names(l.Waiting()), "a refused slice waits")
				return
			}
			assert.Len(t, as, 1)
			assert.Zero(t, l.WaitingCount())
		})
	}
}

// A consumer holding nothing whose older waiter is promised 2 GPUs, its
// whole limit, is refused a third: the message says what is true, that its
// other slices' promises take the limit, not that it is at its limit.
func TestConsumerLimitPromisedToItsOtherWaiter(t *testing.T) {
	l, w := limited(t)
	ls := []*ledger.Ledger{l}
	holdAs(l, "x", "X", gpus("10"))
	refused(t, ls, request("old", "A", at(0), gpus("2")))
	l.ForgetSlice(key("x"), uid("x"))
	require.Equal(t, []string{"old"}, w.take(), "old is promised the 2 GPUs freed")
	r := refused(t, ls, request("new", "A", at(1), gpus("1")))
	assert.Equal(t, ledger.ReasonConsumerLimit, r.Reason)
	assert.Equal(t, `budget pool: consumer "A" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 `+
		`(it fits only if they release capacity or its limit is raised)`, r.Message)
	used := l.Used()[resourceGPU]
	assert.True(t, used.IsZero(), "nobody holds a GPU: %s", used.String())
}

// A waiter stopped by its consumer's limit is woken when that consumer's
// holding drops, however it drops, and not when another consumer's does.
func TestConsumerLimitWake(t *testing.T) {
	cases := map[string]struct {
		reason string
		drop   func(t *testing.T, l *ledger.Ledger, inflight *ledger.Attempt)
		want   []string
	}{
		"Deleted": {
			reason: "A's slice a deleted: A holds 1.",
			drop:   func(_ *testing.T, l *ledger.Ledger, _ *ledger.Attempt) { l.ForgetSlice(key("a"), uid("a")) },
			want:   []string{"b"},
		},
		"Lowered": {
			reason: "A's slice a accepted again for less: A holds 1.",
			drop: func(_ *testing.T, l *ledger.Ledger, _ *ledger.Attempt) {
				l.ObserveSlice(slice("a", "2", gpus("0"), consumer("A")))
			},
			want: []string{"b"},
		},
		"AssumptionNotApplied": {
			reason: "A's in-flight admission was not applied.",
			drop:   func(_ *testing.T, l *ledger.Ledger, a *ledger.Attempt) { l.Done(a, ledger.NotApplied) },
			want:   []string{"b"},
		},
		"QuotaGone": {
			reason: "Liqo's Quota, which held more than a's grant, is gone.",
			drop: func(_ *testing.T, l *ledger.Ledger, _ *ledger.Attempt) {
				l.ObserveQuota(key("a"), uid("a"), "q", "", gpus("1"))
				l.ObserveSlice(slice("a", "2", gpus("0"), consumer("A")))
				l.ForgetQuota(key("a"), "q")
			},
			want: []string{"b"},
		},
		"OtherConsumerReleases": {
			reason: "B's release frees capacity, but A is still at its limit: b is not woken.",
			drop:   func(_ *testing.T, l *ledger.Ledger, _ *ledger.Attempt) { l.ForgetSlice(key("x"), uid("x")) },
		},
		"Denied": {
			reason: "A Deny is not a release: A still holds 2.",
			drop: func(_ *testing.T, l *ledger.Ledger, _ *ledger.Attempt) {
				l.ObserveSlice(slice("a", "2", gpus("1"), consumer("A"), denied))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, w := limited(t)
			holdAs(l, "a", "A", gpus("1"))
			inflight := admitted(t, []*ledger.Ledger{l}, request("c", "A", at(0), gpus("1")))[0]
			holdAs(l, "x", "B", gpus("2"))
			got := refused(t, []*ledger.Ledger{l}, request("b", "A", at(1), gpus("1")))
			require.Equal(t, ledger.ReasonConsumerLimit, got.Reason)
			require.Empty(t, w.take())

			tc.drop(t, l, inflight)
			assert.Equal(t, tc.want, w.take(), tc.reason)
			if tc.want != nil {
				admitted(t, []*ledger.Ledger{l}, request("b", "A", at(1), gpus("1")))
				assert.Zero(t, l.WaitingCount())
			}
		})
	}
}

// When a consumer's holding drops by one slice's worth, only as many of its
// waiters are promised as its limit allows: what is promised to its waiters
// counts against it.
func TestConsumerLimitPromisesOnlyWhatFits(t *testing.T) {
	l, w := limited(t)
	holdAs(l, "a", "A", gpus("2"))
	refused(t, []*ledger.Ledger{l}, request("b", "A", at(1), gpus("1")))
	refused(t, []*ledger.Ledger{l}, request("c", "A", at(2), gpus("1")))

	l.ObserveSlice(slice("a", "2", gpus("1"), consumer("A")))
	assert.Equal(t, []string{"b"}, w.take(), "A may hold one more GPU: its oldest waiter is promised it, not c")

	admitted(t, []*ledger.Ledger{l}, request("b", "A", at(1), gpus("1")))
	got := refused(t, []*ledger.Ledger{l}, request("c", "A", at(2), gpus("1")))
	assert.Equal(t, ledger.ReasonConsumerLimit, got.Reason)
}

// A slice of a consumer must not take the room under the limit promised to
// an older waiter of the same consumer: the limit counts what is promised to
// the consumer's waiters.
func TestConsumerLimitCountsPromisedToWaiters(t *testing.T) {
	l, w := limited(t)
	holdAs(l, "a", "A", gpus("2"))
	refused(t, []*ledger.Ledger{l}, request("b", "A", at(1), gpus("1")))
	l.ObserveSlice(slice("a", "2", gpus("1"), consumer("A")))
	require.Equal(t, []string{"b"}, w.take())

	got := refused(t, []*ledger.Ledger{l}, request("d", "A", at(2), gpus("1")))
	assert.Equal(t, ledger.ReasonConsumerLimit, got.Reason, "the room under A's limit is promised to b")
	admitted(t, []*ledger.Ledger{l}, request("b", "A", at(1), gpus("1")))
}

// A slice whose consumer changes (its namespace gained or changed its
// liqo.io/remote-cluster-id) no longer counts for the old consumer: the old
// consumer's waiter stopped by its limit must be woken.
func TestConsumerLimitWakeWhenSliceChangesConsumer(t *testing.T) {
	l, w := limited(t)
	holdAs(l, "a", "A", gpus("1"))
	admitted(t, []*ledger.Ledger{l}, request("c", "A", at(0), gpus("1")))
	got := refused(t, []*ledger.Ledger{l}, request("b", "A", at(1), gpus("1")))
	require.Equal(t, ledger.ReasonConsumerLimit, got.Reason)

	l.ObserveSlice(slice("a", "2", gpus("1"), consumer("B")))
	assert.Equal(t, []string{"b"}, w.take(), "A holds 1 now")
}

// Without a consumer limit, a consumer may take the whole total.
func TestNoConsumerLimit(t *testing.T) {
	l, _ := newLedgerOpts(t, "pool", gpus("4"), ledger.Options{})
	assert.Nil(t, l.ConsumerLimit())
	for i, n := range []string{"a", "b", "c", "d"} {
		admitted(t, []*ledger.Ledger{l}, request(n, "A", at(i), gpus("1")))
	}
	got := refused(t, []*ledger.Ledger{l}, request("e", "A", at(5), gpus("1")))
	assert.Equal(t, ledger.ReasonExhausted, got.Reason)
	assert.Equal(t, []string{"nvidia.com/gpu"}, got.Resources)
}

// Options are validated and copied.
func TestConsumerLimitOption(t *testing.T) {
	_, err := ledger.New("pool", gpus("4"), ledger.Options{ConsumerLimit: gpus("-1")})
	require.Error(t, err, "a negative limit is refused")
	assert.Equal(t, `budget "pool": negative quantity in consumer limit: nvidia.com/gpu=-1`, err.Error())

	limit := gpus("2")
	l, err := ledger.New("pool", gpus("4"), ledger.Options{ConsumerLimit: limit})
	require.NoError(t, err)
	limit[resourceGPU] = resource.MustParse("100")
	assertList(t, gpus("2"), l.ConsumerLimit(), "New keeps its own copy of the limit")
	got := l.ConsumerLimit()
	got[resourceGPU] = resource.MustParse("100")
	assertList(t, gpus("2"), l.ConsumerLimit(), "ConsumerLimit returns a copy")
}
