package ledger_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// TestAdmitAll: an offer is admitted in every ledger or in none, and the
// refusal names the first ledger of the list that refused, whatever order
// the ledgers were created (and are locked) in.
func TestAdmitAll(t *testing.T) {
	type state struct {
		provider, gold corev1.ResourceList // Used
		waitP, waitG   []string            // Waiting
	}
	cases := map[string]struct {
		reason string
		// order lists the ledgers to ask: "provider", "gold".
		order []string
		offer corev1.ResourceList
		c     string
		want  *ledger.Refusal
		after state
	}{
		"BothFit": {
			reason: "An offer that fits both is held in both.",
			order:  []string{"gold", "provider"}, offer: cpu("2"), c: "A",
			after: state{provider: cpu("7"), gold: cpu("3")},
		},
		"GoldRefuses": {
			reason: "Gold is short: nothing is held in the provider either (never a partial hold); the slice waits in gold only.",
			order:  []string{"provider", "gold"}, offer: cpu("3"), c: "A",
			want: &ledger.Refusal{Budget: "gold", Reason: ledger.ReasonExhausted, Resources: []string{"cpu"},
				Message: "budget gold: cpu: asked 3, waits until 3 is free"},
			after: state{provider: cpu("5"), gold: cpu("1"), waitG: []string{"gold/ns/s"}},
		},
		"ProviderRefuses": {
			reason: "The provider-wide budget is short: nothing is held in gold.",
			order:  []string{"gold", "provider"}, offer: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1")},
			c: "A",
			want: &ledger.Refusal{Budget: "provider", Reason: ledger.ReasonExhausted, Resources: []string{"memory"},
				Message: "budget provider: memory: asked 1, waits until 1 is free (memory: asked 1, more than the budget's total 0: it fits only if the total grows)"},
			after: state{provider: cpu("5"), gold: cpu("1"), waitP: []string{"gold/ns/s"}},
		},
		"BothRefuseProviderFirst": {
			reason: "Both are short: the refusal names the first of the list, and the slice waits in both.",
			order:  []string{"provider", "gold"}, offer: cpu("4"), c: "A",
			want: &ledger.Refusal{Budget: "provider", Reason: ledger.ReasonExhausted, Resources: []string{"cpu"},
				Message: `budget provider: cpu: asked 4, waits until 4 is free (cpu: asked 4, more than consumer "A"'s limit 3: it fits only if that limit is raised)`},
			after: state{provider: cpu("5"), gold: cpu("1"), waitP: []string{"gold/ns/s"}, waitG: []string{"gold/ns/s"}},
		},
		"BothRefuseGoldFirst": {
			reason: "The same, listed the other way round: gold (created after the provider) is named.",
			order:  []string{"gold", "provider"}, offer: cpu("4"), c: "A",
			want: &ledger.Refusal{Budget: "gold", Reason: ledger.ReasonExhausted, Resources: []string{"cpu"},
				Message: "budget gold: cpu: asked 4, waits until 4 is free (cpu: asked 4, more than the budget's total 3: it fits only if the total grows)"},
			after: state{provider: cpu("5"), gold: cpu("1"), waitP: []string{"gold/ns/s"}, waitG: []string{"gold/ns/s"}},
		},
		"ConsumerLimitOfOne": {
			reason: "The provider-wide budget limits each consumer to 3 CPUs: B, holding 2 there, is refused with its reason although gold fits.",
			order:  []string{"gold", "provider"}, offer: cpu("2"), c: "B",
			want: &ledger.Refusal{Budget: "provider", Reason: ledger.ReasonConsumerLimit, Resources: []string{"cpu"},
				Message: `budget provider: consumer "B" would go over its limit beside what its other slices hold or are promised: cpu: asked 2, limit 3 (it fits only if they release capacity or its limit is raised)`},
			after: state{provider: cpu("5"), gold: cpu("1"), waitP: []string{"gold/ns/s"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// provider: 8 cpu, 0 memory, 3 cpu per consumer; 5 used (3 by
			// Z's slice, 2 by B's, both of class silver). gold: 3 cpu, 1
			// used by A's.
			provider, _ := newLedgerOpts(t, "provider", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("0")},
				ledger.Options{ConsumerLimit: cpu("3")})
			gold, _ := newLedgerOpts(t, "gold", cpu("3"), ledger.Options{})
			require.NoError(t, provider.Attach("silver", ledger.Class{}))
			provider.ObserveSlice(slice("z", "1", cpu("3"), consumer("Z"), inClass("silver")))
			provider.ObserveSlice(slice("b", "1", cpu("2"), consumer("B"), inClass("silver")))
			holdAs(gold, "a", "A", cpu("1"))

			by := map[string]*ledger.Ledger{"provider": provider, "gold": gold}
			var ls []*ledger.Ledger
			for _, n := range tc.order {
				ls = append(ls, by[n])
			}
			r := request("s", tc.c, at(1), tc.offer)

			assert.Empty(t, cmp.Diff(tc.want, ledger.CheckAll(ls, r)), "%s\nCheckAll (-want +got)", tc.reason)
			as, refusal := ledger.AdmitAll(ls, r)
			assert.Empty(t, cmp.Diff(tc.want, refusal), "%s\nAdmitAll (-want +got)", tc.reason)
			if tc.want == nil {
				assert.Len(t, as, len(ls), "one attempt per ledger")
			} else {
				assert.Nil(t, as)
			}
			got := state{provider: provider.Used(), gold: gold.Used(), waitP: names(provider.Waiting()), waitG: names(gold.Waiting())}
			want := tc.after
			want.provider = withZeroMemory(want.provider)
			assert.Empty(t, cmp.Diff(want, got, byValue, cmp.AllowUnexported(state{})), "%s\nafter (-want +got)", tc.reason)
		})
	}
}

func withZeroMemory(rl corev1.ResourceList) corev1.ResourceList {
	out := rl.DeepCopy()
	out[corev1.ResourceMemory] = resource.Quantity{}
	return out
}

// A slice waiting in one ledger that it now fits, refused by another,
// leaves the first's line (releasing what was promised to it there, which
// goes to the next waiter) and joins the other's.
func TestAdmitAllLeavesTheLinesItFits(t *testing.T) {
	p, wp := newLedgerOpts(t, "provider", cpu("5"), ledger.Options{})
	g, _ := newLedgerOpts(t, "gold", cpu("4"), ledger.Options{})
	ls := []*ledger.Ledger{g, p}

	holdAs(p, "x", "Z", cpu("4"))
	holdAs(p, "bb", "B", cpu("1")) // B holds some: A, holding none, goes first
	got := refused(t, ls, request("s", "A", at(1), cpu("2")))
	assert.Equal(t, "provider", got.Budget)
	refused(t, []*ledger.Ledger{p}, request("t", "B", at(2), cpu("2")))
	assert.Equal(t, []string{"gold/ns/s", "gold/ns/t"}, names(p.Waiting()))
	assert.Empty(t, g.Waiting())

	p.ObserveSlice(slice("x", "2", cpu("2"), consumer("Z")))
	assert.Equal(t, []string{"s"}, wp.take(), "s, the oldest, is promised the 2 freed in provider")

	holdAs(g, "y", "Z", cpu("3"))
	got = refused(t, ls, request("s", "A", at(1), cpu("2")))
	assert.Equal(t, "gold", got.Budget, "gold is now short")
	assert.Equal(t, []string{"gold/ns/s"}, names(g.Waiting()), "s waits in gold")
	assert.Equal(t, []string{"gold/ns/t"}, names(p.Waiting()), "s left provider's line")
	assert.Equal(t, []string{"t"}, wp.take(), "what was promised to s in provider goes to t")
	assertList(t, cpu("3"), p.Used(), "nothing held for s in provider")
}

// Two classes sharing a provider-wide budget, each with its own, admitting
// concurrently in both lock orders: no deadlock, and no budget is ever
// exceeded.
func TestAdmitAllConcurrent(t *testing.T) {
	p, _ := newLedgerOpts(t, "provider", cpu("10"), ledger.Options{ConsumerLimit: cpu("4")})
	g, _ := newLedgerOpts(t, "gold", cpu("6"), ledger.Options{})
	s, _ := newLedgerOpts(t, "silver", cpu("6"), ledger.Options{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admittedBy := map[string]int{}
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls := []*ledger.Ledger{g, p}
			if i%2 == 1 {
				ls = []*ledger.Ledger{p, s}
			}
			c := fmt.Sprintf("c%d", i%5)
			as, refusal := ledger.AdmitAll(ls, request(fmt.Sprintf("s%03d", i), c, at(i), cpu("1")))
			if refusal == nil {
				mu.Lock()
				admittedBy[c] += len(as) / 2
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := 0
	for c, n := range admittedBy {
		assert.LessOrEqual(t, n, 4, "consumer %s past its limit", c)
		total += n
	}
	assert.Equal(t, 10, total, "the provider's 10 are all taken (5 consumers × limit 4 > 10)")
	assertList(t, cpu("10"), p.Used(), "provider")
	gu, su := g.Used()[corev1.ResourceCPU], s.Used()[corev1.ResourceCPU]
	assert.LessOrEqual(t, gu.Value(), int64(6), "gold")
	assert.LessOrEqual(t, su.Value(), int64(6), "silver")
	assert.Equal(t, int64(10), gu.Value()+su.Value(), "every admission is held in its class's budget and the provider's")
}

// BenchmarkAdmitAll compares the cost of one admission with 1000 slices
// waiting: one ledger, one ledger with a consumer limit, two ledgers.
func BenchmarkAdmitAll(b *testing.B) {
	const waiters = 1000
	big := cpu("1000000")
	setup := func(b *testing.B, name string, opts ledger.Options) *ledger.Ledger {
		l, _ := newLedgerOpts(b, name, big, opts)
		for i := range waiters {
			// Each asks more than the total: they wait for good.
			as, _ := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: gold(fmt.Sprintf("w%04d", i)),
				Created: at(i), Consumer: fmt.Sprintf("c%d", i%10), Offer: cpu("2000000")})
			if as != nil || l.WaitingCount() != i+1 {
				b.Fatal("waiter admitted")
			}
		}
		return l
	}
	cases := []struct {
		name    string
		ledgers func(b *testing.B) []*ledger.Ledger
	}{
		{"OneLedger", func(b *testing.B) []*ledger.Ledger {
			return []*ledger.Ledger{setup(b, "pool", ledger.Options{})}
		}},
		{"ConsumerLimit", func(b *testing.B) []*ledger.Ledger {
			return []*ledger.Ledger{setup(b, "pool", ledger.Options{ConsumerLimit: big})}
		}},
		{"TwoLedgers", func(b *testing.B) []*ledger.Ledger {
			return []*ledger.Ledger{setup(b, "gold", ledger.Options{}), setup(b, "provider", ledger.Options{})}
		}},
		// Issue 45: OneLedger as a member of a cohort of 10, the others
		// idle (target: at most 1.2x OneLedger's CPU).
		{"CohortOf10", func(b *testing.B) []*ledger.Ledger {
			c, err := ledger.NewCohort("bench")
			if err != nil {
				b.Fatal(err)
			}
			l := setup(b, "pool", ledger.Options{})
			l.JoinCohort(c)
			for i := range 9 {
				// Small: the waiters, asking twice the pool's total, still wait.
				m, _ := newLedgerOpts(b, fmt.Sprintf("member%d", i), cpu("1"), ledger.Options{})
				m.JoinCohort(c)
			}
			return []*ledger.Ledger{l}
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			ls := bc.ledgers(b)
			reqs := make([]ledger.Request, b.N)
			for i := range reqs {
				reqs[i] = request(fmt.Sprintf("s%07d", i), fmt.Sprintf("c%d", i%10), at(waiters+i), cpu("1"))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, refusal := ledger.AdmitAll(ls, reqs[i]); refusal != nil {
					b.Fatal(refusal.Message)
				}
			}
		})
	}
}
