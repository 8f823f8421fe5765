package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

func TestObserve(t *testing.T) {
	tierGold := labels.SelectorFromSet(labels.Set{"tier": "gold"})
	cases := map[string]struct {
		reason   string
		selector labels.Selector // gold's selector
		steps    func(l *ledger.Ledger)
		want     corev1.ResourceList // Used after steps
	}{
		"Accepted": {
			reason: "An Accepted slice of an attached class counts its grant.",
			steps:  func(l *ledger.Ledger) { l.ObserveSlice(slice("a", "1", res("2", "1Gi"))) },
			want:   res("2", "1Gi"),
		},
		"NotAccepted": {
			reason: "A slice never accepted holds nothing.",
			steps:  func(l *ledger.Ledger) { l.ObserveSlice(slice("a", "1", nil)) },
			want:   res("0", "0"),
		},
		"DenyAfterAcceptIsSticky": {
			reason: "A Deny after an Accept is not a release: Liqo's Quota and virtual node stay.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("2")))
				l.ObserveSlice(slice("a", "2", cpu("2"), denied))
				l.ObserveSlice(slice("a", "3", nil))
			},
			want: res("2", "0"),
		},
		"SmallerAcceptanceLowers": {
			reason: "An acceptance of less replaces the grant.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3")))
				l.ObserveSlice(slice("a", "2", cpu("1")))
			},
			want: res("1", "0"),
		},
		"QuotaLargerThanGrant": {
			reason: "Per resource, a slice holds the larger of its grant and its live Quotas.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", res("3", "1Gi")))
				l.ObserveQuota(key("a"), uid("a"), "q1", "", res("1", "2Gi"))
			},
			want: res("3", "2Gi"),
		},
		"QuotaBeforeSlice": {
			reason: "A Quota seen before its slice counts once the slice is seen.",
			steps: func(l *ledger.Ledger) {
				l.ObserveQuota(key("a"), uid("a"), "q1", "", cpu("3"))
				l.ObserveSlice(slice("a", "1", nil))
			},
			want: res("3", "0"),
		},
		"ForgetQuota": {
			reason: "A Quota gone no longer counts; the grant does.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("1")))
				l.ObserveQuota(key("a"), uid("a"), "q1", "", cpu("3"))
				l.ForgetQuota(key("a"), "q1")
			},
			want: res("1", "0"),
		},
		"QuotaOfOtherUID": {
			reason: "A Quota owned by an older slice of the same name is not this slice's.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("1")))
				l.ObserveQuota(key("a"), "uid-old", "q1", "", cpu("5"))
			},
			want: res("1", "0"),
		},
		"StaleObservation": {
			reason: "An observation older than the last seen (5 after 7) is ignored, numerically.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "7", cpu("2")))
				l.ObserveSlice(slice("a", "5", cpu("6")))
			},
			want: res("2", "0"),
		},
		"NumericNotLexical": {
			reason: "resourceVersion 10 is newer than 9.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "9", cpu("2")))
				l.ObserveSlice(slice("a", "10", cpu("1")))
			},
			want: res("1", "0"),
		},
		"ForgetSlice": {
			reason: "A deleted slice holds nothing: grant, Quotas and assumptions all go.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("1")))
				l.ObserveQuota(key("a"), uid("a"), "q1", "", cpu("2"))
				a, _ := l.Admit(gold("a"), "1", at(0), cpu("3"))
				l.Done(a, ledger.Applied)
				l.ForgetSlice(key("a"), "")
			},
			want: res("0", "0"),
		},
		"ForgottenNotRevived": {
			reason: "A read from before the deletion cannot bring the slice back, whatever its resourceVersion.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "4", cpu("2")))
				l.ForgetSlice(key("a"), "")
				l.ObserveSlice(slice("a", "4", cpu("2")))
				l.ObserveSlice(slice("a", "5", cpu("2")))
			},
			want: res("0", "0"),
		},
		"RecreatedWithNewUID": {
			reason: "A slice deleted and created again under the same name (deletion unseen) replaces the old one.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "4", cpu("3")))
				l.ObserveSlice(slice("a", "9", cpu("1"), withUID("uid-a2")))
			},
			want: res("1", "0"),
		},
		"RecreatedAfterForget": {
			reason: "The tombstone is per UID: a new slice of the same name counts.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "4", cpu("3")))
				l.ForgetSlice(key("a"), "")
				l.ObserveSlice(slice("a", "9", cpu("1"), withUID("uid-a2")))
			},
			want: res("1", "0"),
		},
		"UnattachedClass": {
			reason: "A slice of a class not attached counts nothing.",
			steps:  func(l *ledger.Ledger) { l.ObserveSlice(slice("a", "1", cpu("3"), inClass("bronze"))) },
			want:   res("0", "0"),
		},
		"ClassAttachedLater": {
			reason: "Attaching a class counts the slices it serves.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3"), inClass("bronze")))
				_ = l.Attach("bronze", ledger.Class{})
			},
			want: res("3", "0"),
		},
		"LeftClassKeepsHeld": {
			reason: "A slice moved to an unattached class still holds what Liqo enforces.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3")))
				l.ObserveSlice(slice("a", "2", cpu("3"), inClass("bronze")))
			},
			want: res("3", "0"),
		},
		"LeftClassCappedAtHeldWhenLeaving": {
			reason: "After leaving, a larger acceptance by the other class is not counted here.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3")))
				l.ObserveSlice(slice("a", "2", cpu("3"), inClass("bronze")))
				l.ObserveSlice(slice("a", "3", cpu("8"), inClass("bronze")))
			},
			want: res("3", "0"),
		},
		"LeftClassLowered": {
			reason: "After leaving, an acceptance of less lowers what is counted.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3")))
				l.ObserveSlice(slice("a", "2", cpu("3"), inClass("bronze")))
				l.ObserveSlice(slice("a", "3", cpu("1"), inClass("bronze")))
			},
			want: res("1", "0"),
		},
		"Detached": {
			reason: "Detaching a class frees nothing in use, and caps what its slices count.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3")))
				l.Detach("gold")
				l.ObserveSlice(slice("a", "2", cpu("8")))
			},
			want: res("3", "0"),
		},
		"Reattached": {
			reason: "Attaching the class again counts its slices fully.",
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3")))
				l.Detach("gold")
				l.ObserveSlice(slice("a", "2", cpu("8")))
				_ = l.Attach("gold", ledger.Class{})
			},
			want: res("8", "0"),
		},
		"SelectorMatches": {
			reason:   "A slice the class's selector matches counts.",
			selector: tierGold,
			steps:    func(l *ledger.Ledger) { l.ObserveSlice(slice("a", "1", cpu("3"), withLabels("tier", "gold"))) },
			want:     res("3", "0"),
		},
		"SelectorExcludes": {
			reason:   "A slice of the class the selector does not match is not served by it.",
			selector: tierGold,
			steps:    func(l *ledger.Ledger) { l.ObserveSlice(slice("a", "1", cpu("3"), withLabels("tier", "silver"))) },
			want:     res("0", "0"),
		},
		"LabelsChangedAway": {
			reason:   "A slice relabelled out of the selector left the class: it is capped at what it held.",
			selector: tierGold,
			steps: func(l *ledger.Ledger) {
				l.ObserveSlice(slice("a", "1", cpu("3"), withLabels("tier", "gold")))
				l.ObserveSlice(slice("a", "2", cpu("3"), withLabels("tier", "silver")))
				l.ObserveSlice(slice("a", "3", cpu("8"), withLabels("tier", "silver")))
			},
			want: res("3", "0"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := ledger.New("pool", res("10", "10Gi"))
			require.NoError(t, err)
			require.NoError(t, l.Attach("gold", ledger.Class{Selector: tc.selector}))
			tc.steps(l)
			assertList(t, tc.want, l.Used(), tc.reason)
		})
	}
}

// TestObserveLeaveAndGrowAtOnce: one observation (a relist coalescing two
// writes) shows the slice both moved to an unattached class and accepted
// for more by that class. What it held when it left is what the ledger last
// saw it hold as a member.
func TestObserveLeaveAndGrowAtOnce(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	l.ObserveSlice(slice("a", "1", cpu("3")))
	l.ObserveSlice(slice("a", "5", cpu("8"), inClass("bronze")))
	assertList(t, cpu("3"), l.Used(), "counted = min(held at leave, held now)")
}

// TestObserveLeftClassDoesNotReboundAfterLowering: a slice that left the
// budget's classes and was then accepted for less gave the difference back;
// the free capacity may go to another slice, so the departed slice must not
// count more again when its new class accepts it for more.
func TestObserveLeftClassDoesNotReboundAfterLowering(t *testing.T) {
	l, _ := newLedger(t, cpu("4"))
	l.ObserveSlice(slice("a", "1", cpu("3")))
	l.ObserveSlice(slice("a", "2", cpu("3"), inClass("bronze")))
	l.ObserveSlice(slice("a", "3", cpu("1"), inClass("bronze")))
	b := admit(t, l, gold("b"), "1", at(1), cpu("3"))
	l.Done(b, ledger.Applied)
	l.ObserveSlice(slice("b", "2", cpu("3")))
	assertList(t, cpu("4"), l.Used(), "a counts 1, b counts 3")

	l.ObserveSlice(slice("a", "4", cpu("3"), inClass("bronze")))
	assertList(t, cpu("4"), l.Used(), "bronze's acceptance must not draw from this budget")
}

func TestStaleObservationDoesNotMoveBack(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	assert.False(t, l.Ahead(key("a"), uid("a"), "1"), "never observed")

	l.ObserveSlice(slice("a", "7", cpu("1")))
	l.ObserveSlice(slice("a", "5", cpu("1")))
	assert.True(t, l.Ahead(key("a"), uid("a"), "6"), "a stale observation does not move the resourceVersion back from 7")
	assert.False(t, l.Ahead(key("a"), uid("a"), "7"))

	l.ForgetSlice(key("a"), "")
	assert.False(t, l.Ahead(key("a"), uid("a"), "1"), "forgotten")
}
