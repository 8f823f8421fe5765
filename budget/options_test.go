package budget_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

func TestNewOptions(t *testing.T) {
	cases := map[string]struct {
		reason    string
		opts      []budget.Option
		wantErr   string
		wantLimit corev1.ResourceList
	}{
		"NoOption": {
			reason: "No consumer is limited by default.",
		},
		"ConsumerLimit": {
			reason: "The limit reaches the ledger.",
			opts:   []budget.Option{budget.WithConsumerLimit(list("nvidia.com/gpu", "2"))}, wantLimit: list("nvidia.com/gpu", "2"),
		},
		"EmptyConsumerLimit": {
			reason: "An empty limit would limit nothing: refused.",
			opts:   []budget.Option{budget.WithConsumerLimit(corev1.ResourceList{})}, wantErr: `budget "pool": empty consumer limit`,
		},
		"NilConsumerLimit": {
			reason: "A nil limit is empty too.",
			opts:   []budget.Option{budget.WithConsumerLimit(nil)}, wantErr: `budget "pool": empty consumer limit`,
		},
		"NegativeConsumerLimit": {
			reason: "A negative limit is refused, naming it.",
			opts:   []budget.Option{budget.WithConsumerLimit(list("cpu", "-1"))}, wantErr: `budget "pool": negative quantity in consumer limit: cpu=-1`,
		},
		"OldestFirst": {
			reason: "WithOldestFirst applies to New.",
			opts:   []budget.Option{budget.WithOldestFirst()},
		},
		"NilOption": {
			reason: "A nil option is ignored.",
			opts:   []budget.Option{nil},
		},
		"CohortTermsWithoutCohort": {
			reason: "Borrowing, lending and reclaim terms mean nothing outside a cohort: refused, not ignored.",
			opts: []budget.Option{budget.WithBorrowingLimit(list("cpu", "1")), budget.WithLendingLimit(list("cpu", "1")),
				budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimAny)},
			wantErr: "WithBorrowingLimit, WithLendingLimit, WithReclaimWithinCohort: only for a member of a cohort (add WithCohort)",
		},
		"EmptyCohort": {
			reason: "A cohort has a name.",
			opts:   []budget.Option{budget.WithCohort("")}, wantErr: `cohort ""`,
		},
		"CohortNotADNSLabel": {
			reason: "A cohort's name is a DNS label, as the API server wants spec.cohort.",
			opts:   []budget.Option{budget.WithCohort("Gold_Tier")}, wantErr: `cohort "Gold_Tier"`,
		},
		"EmptyBorrowingLimit": {
			reason: "An empty borrowing limit is refused: leave the option out for no limit.",
			opts:   []budget.Option{budget.WithCohort("pool"), budget.WithBorrowingLimit(nil)}, wantErr: "empty borrowing limit",
		},
		"UnknownReclaimPolicy": {
			reason: "A policy is one of three.",
			opts:   []budget.Option{budget.WithCohort("pool"), budget.WithReclaimWithinCohort("Always")}, wantErr: `reclaim within cohort "Always"`,
		},
		"BorrowingLimitOfAnotherResource": {
			reason: "A limit names only resources the total limits.",
			opts:   []budget.Option{budget.WithCohort("pool"), budget.WithBorrowingLimit(list("memory", "1"))}, wantErr: "borrowing limit names memory, which the total does not limit",
		},
		"CohortMember": {
			reason: "A member with every term.",
			opts: []budget.Option{budget.WithCohort("pool"), budget.WithBorrowingLimit(list("cpu", "1")), budget.WithLendingLimit(list("cpu", "1")),
				budget.WithReclaimWithinCohort(v1alpha1.CohortReclaimLowerPriority)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := budget.New("pool", list("cpu", "8", "nvidia.com/gpu", "4"), tc.opts...)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				assert.Nil(t, b)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Empty(t, cmp.Diff(tc.wantLimit, ledger.Of(b).ConsumerLimit(), byValue), "%s\nconsumer limit (-want +got)", tc.reason)
		})
	}
}

// The options reach the ledger's behaviour: a consumer limit refuses with
// its reason; OldestFirst changes who is woken first.
func TestOptionsReachTheLedger(t *testing.T) {
	cases := map[string]struct {
		reason string
		opts   []budget.Option
		want   []string
	}{
		"Fair": {
			reason: "By default consumer B, holding nothing, is served before A's older waiter (A holds 1 of 3).",
			want:   []string{"b"},
		},
		"OldestFirst": {
			reason: "WithOldestFirst: A's older waiter first.",
			opts:   []budget.Option{budget.WithOldestFirst()}, want: []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := budget.New("pool", list("cpu", "3"), tc.opts...)
			require.NoError(t, err)
			l := ledger.Of(b)
			// Wake is called from any goroutine (the ledger's refresh of
			// waiters' messages too): what the capacity freed woke is read
			// at once, before a refresh could run.
			var mu sync.Mutex
			var woken []string
			require.NoError(t, l.Attach("gold", ledger.Class{Wake: func(k types.NamespacedName) {
				mu.Lock()
				defer mu.Unlock()
				woken = append(woken, k.Name)
			}}))
			l.ObserveSlice(ledger.Slice{Key: nsName("x"), UID: "x", RV: "1", Class: "gold", Consumer: "A", Accepted: true, Grant: list("cpu", "3")})
			for i, w := range []struct{ name, consumer string }{{"a", "A"}, {"b", "B"}} {
				_, refusal := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "gold", Key: nsName(w.name)},
					Consumer: w.consumer, Created: t0Plus(i), Offer: list("cpu", "2")})
				require.NotNil(t, refusal)
			}
			l.ObserveSlice(ledger.Slice{Key: nsName("x"), UID: "x", RV: "2", Class: "gold", Consumer: "A", Accepted: true, Grant: list("cpu", "1")})
			mu.Lock()
			got := append([]string(nil), woken...)
			mu.Unlock()
			assert.Equal(t, tc.want, got, tc.reason)
		})
	}
}

func TestConsumerLimitRefusal(t *testing.T) {
	b, err := budget.New("gpu", list("nvidia.com/gpu", "8"), budget.WithConsumerLimit(list("nvidia.com/gpu", "2")))
	require.NoError(t, err)
	l := ledger.Of(b)
	for i, n := range []string{"a", "b", "c"} {
		as, refusal := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "gold", Key: nsName(n)},
			Consumer: "peer-1", Created: t0Plus(i), Offer: list("nvidia.com/gpu", "1")})
		if i < 2 {
			require.Nil(t, refusal)
			require.Len(t, as, 1)
			continue
		}
		want := &ledger.Refusal{Budget: "gpu", Reason: budget.ReasonConsumerLimit, Resources: []string{"nvidia.com/gpu"},
			Message: `budget gpu: consumer "peer-1" would go over its limit beside what its other slices hold or are promised: nvidia.com/gpu: asked 1, limit 2 (it fits only if they release capacity or its limit is raised)`}
		assert.Empty(t, cmp.Diff(want, refusal), "(-want +got)")
	}
	assert.Equal(t, "ConsumerLimitReached", budget.ReasonConsumerLimit)
	assert.Equal(t, "BudgetExhausted", budget.ReasonExhausted)
}

func nsName(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

func t0Plus(s int) time.Time {
	return time.Date(2025, 1, 1, 0, 0, s, 0, time.UTC)
}
