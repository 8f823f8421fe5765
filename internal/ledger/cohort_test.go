package ledger_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// tier is one member of the cohort: a ledger named after its one
// class, and what that class's Wake receives.
type tier struct {
	l    *ledger.Ledger
	w    *wakes
	prio int32
}

// newTier returns ledger name with class name attached (priority prio),
// joined to c.
func newTier(t *testing.T, c *ledger.Cohort, name string, total corev1.ResourceList, prio int32, opts ledger.Options) tier {
	t.Helper()
	l, err := ledger.New(name, total, opts)
	require.NoError(t, err)
	w := &wakes{}
	require.NoError(t, l.Attach(name, ledger.Class{Wake: w.wake, Priority: prio}))
	l.JoinCohort(c)
	return tier{l: l, w: w, prio: prio}
}

// tiers is the provider: gold 10 (lends all), spot 2 (may borrow
// 14), silver 4 (lends 2), in one cohort.
func tiers(t *testing.T) (c *ledger.Cohort, gold, spot, silver tier) {
	t.Helper()
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	gold = newTier(t, c, "gold", cpu("10"), 10, ledger.Options{})
	spot = newTier(t, c, "spot", cpu("2"), 0, ledger.Options{BorrowingLimit: cpu("14")})
	silver = newTier(t, c, "silver", cpu("4"), 5, ledger.Options{LendingLimit: cpu("2")})
	return c, gold, spot, silver
}

// ask is the request of slice name of class (and budget) of tier tr.
func ask(tr tier, name string, offer corev1.ResourceList) ledger.Request {
	class := tr.l.Name()
	return ledger.Request{Holder: ledger.Holder{Class: class, Key: key(name)}, UID: uid(name), Base: "1", Created: t0,
		Consumer: "c-" + name, Offer: offer, Priority: tr.prio}
}

// grant admits r in tr, as applied by the server, and observes its slice
// holding r's offer.
func grant(t *testing.T, tr tier, r ledger.Request) {
	t.Helper()
	as := admitted(t, []*ledger.Ledger{tr.l}, r)
	tr.l.Done(as[0], ledger.Applied)
	holdIn(tr, r.Key.Name, r.Offer)
}

// rvs numbers the observations of holdIn, each newer than the last.
var rvs atomic.Int64

// holdIn makes slice name of tr's class observed holding grant, at a
// version newer than any before.
func holdIn(tr tier, name string, grant corev1.ResourceList) {
	rv := strconv.FormatInt(rvs.Add(1)+1, 10)
	tr.l.ObserveSlice(slice(name, rv, grant, inClass(tr.l.Name()), consumer("c-"+name)))
}

// TestCohortBorrowing: a member borrows what the others may lend and no
// more; what a member may not lend stays its own; borrowed and lent add
// up.
func TestCohortBorrowing(t *testing.T) {
	c, gold, spot, silver := tiers(t)
	assert.Equal(t, []string{"gold", "silver", "spot"}, c.Members())

	// Spot fills what the others may lend: its 2, gold's 10, silver's 2.
	grant(t, spot, ask(spot, "s1", cpu("14")))
	r := refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s2", cpu("1")))
	assert.Equal(t, ledger.ReasonExhausted, r.Reason)
	// Gold lends all: nothing of its own is left idle for it.
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("1")))
	// Silver's 2 it does not lend are its own.
	admitted(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("2")))
	refused(t, []*ledger.Ledger{silver.l}, ask(silver, "v2", cpu("1")))

	spotS, goldS, silverS := spot.l.Snapshot(), gold.l.Snapshot(), silver.l.Snapshot()
	assertList(t, cpu("12"), spotS.Borrowed, "spot borrowed")
	assertList(t, cpu("0"), spotS.Lent, "spot lent")
	assertList(t, cpu("10"), goldS.Lent, "gold lent: all its total is idle and lendable")
	assertList(t, cpu("2"), silverS.Lent, "silver lent: the 2 it may lend")
	assertList(t, cpu("0"), silverS.Borrowed, "silver borrowed")
	assert.Equal(t, "pool", goldS.Cohort)

	// Spot's slice releases 1: the waiters of the other members are
	// woken for what it freed; gold's, older, is promised it first and
	// silver's, which no longer fits beside that promise, stays asleep.
	gold.w.take()
	silver.w.take()
	holdIn(spot, "s1", cpu("13"))
	assert.Equal(t, []string{"g1"}, gold.w.take(), "gold's waiter is woken by what spot freed")
	assert.Empty(t, silver.w.take(), "what gold's waiter is promised is not silver's")
	refused(t, []*ledger.Ledger{silver.l}, ask(silver, "v2", cpu("1")))
	admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("1")))
}

// TestCohortBorrowingLimit: a borrower stops at its borrowing limit even
// when the cohort has more idle; with no limit it may take all that is
// lendable, and a member outside the cohort lends nothing.
func TestCohortBorrowingLimit(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	lender := newTier(t, c, "lender", cpu("10"), 0, ledger.Options{})
	capped := newTier(t, c, "capped", cpu("1"), 0, ledger.Options{BorrowingLimit: cpu("3")})
	r := refused(t, []*ledger.Ledger{capped.l}, ask(capped, "a", cpu("5")))
	assert.Contains(t, r.Message, "more than the budget may hold in its cohort, 4")
	admitted(t, []*ledger.Ledger{capped.l}, ask(capped, "b", cpu("4")))
	refused(t, []*ledger.Ledger{capped.l}, ask(capped, "c", cpu("1")))

	// Without a borrowing limit, the waiting 5 and 1 fit: they are
	// promised it and woken; beside them, what the lender lends leaves 1.
	capped.w.take()
	require.NoError(t, capped.l.SetCohortTerms(nil, nil, ledger.ReclaimNever))
	assert.Equal(t, []string{"a", "c"}, capped.w.take())
	refused(t, []*ledger.Ledger{capped.l}, ask(capped, "d", cpu("2")))
	admitted(t, []*ledger.Ledger{capped.l}, ask(capped, "a", cpu("5")))
	admitted(t, []*ledger.Ledger{capped.l}, ask(capped, "c", cpu("1")))
	admitted(t, []*ledger.Ledger{capped.l}, ask(capped, "d", cpu("1")))
	refused(t, []*ledger.Ledger{capped.l}, ask(capped, "e", cpu("1")))

	// The lender leaves once the borrower holds nothing of its (see
	// TestCohortLeaveWhileLending); outside the cohort it is a budget of
	// its own again: its total less what its own slices count.
	for _, s := range []string{"a", "b", "c", "d"} {
		borrowerGone := slice(s, "9", nil, inClass("capped"), consumer("c-"+s))
		capped.l.ObserveSlice(borrowerGone)
		capped.l.ForgetSlice(key(s), uid(s))
	}
	lender.l.JoinCohort(nil)
	assert.Equal(t, "", lender.l.Cohort())
	assert.Equal(t, []string{"capped"}, c.Members())
	admitted(t, []*ledger.Ledger{lender.l}, ask(lender, "f", cpu("10")))
}

// TestCohortTermsRefused: bad terms are refused with the field's name.
func TestCohortTermsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		opts ledger.Options
		want string
	}{
		"NegativeBorrowing": {ledger.Options{BorrowingLimit: cpu("-1")}, "negative quantity in borrowing limit"},
		"LendingAboveTotal": {ledger.Options{LendingLimit: cpu("3")}, "lending limit above the total: cpu: 3 above the total 2"},
		"UnknownResource":   {ledger.Options{LendingLimit: gpus("1")}, "lending limit names nvidia.com/gpu, which the total does not limit"},
		"UnknownPolicy":     {ledger.Options{ReclaimWithinCohort: "Sometimes"}, `reclaim within cohort "Sometimes"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ledger.New("b", cpu("2"), tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := ledger.NewCohort("")
	require.Error(t, err)
}

// TestCohortNeverOverAdmits races many admissions across the members (and
// a budget outside the cohort each of them also answers to, locked with
// them), with some writes refused and forgotten: the cohort never counts
// more than the sum of its totals, no member more than its total and its
// borrowing limit, and once the line settles the cohort is full.
func TestCohortNeverOverAdmits(t *testing.T) {
	_, gold, spot, silver := tiers(t)
	provider, err := ledger.New("provider", cpu("100"))
	require.NoError(t, err)
	for _, c := range []string{"gold", "spot", "silver"} {
		require.NoError(t, provider.Attach(c, ledger.Class{}))
	}
	members := []tier{gold, spot, silver}
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := members[i%3]
			r := ask(tr, fmt.Sprintf("r%d", i), cpu("500m"))
			ls := []*ledger.Ledger{tr.l, provider}
			if i%2 == 1 {
				ls = []*ledger.Ledger{provider, tr.l}
			}
			as, refusal := ledger.AdmitAll(ls, r)
			if refusal != nil {
				return
			}
			if i%5 == 0 { // refused by the server: forgotten at once
				for j, l := range ls {
					l.Done(as[j], ledger.NotApplied)
				}
			}
		}()
	}
	wg.Wait()
	sum := func() resource.Quantity {
		var sum resource.Quantity
		for _, tr := range members {
			u := tr.l.Used()[corev1.ResourceCPU]
			sum.Add(u)
		}
		return sum
	}
	got := sum()
	assert.LessOrEqual(t, got.Cmp(resource.MustParse("16")), 0, "the cohort holds %s; its totals sum to 16", got.String())
	// Every slice asks again, in turn: what the refused writes left idle
	// is admitted, to the full cohort and no further.
	for range 2 {
		for i := range 120 {
			tr := members[i%3]
			ledger.AdmitAll([]*ledger.Ledger{tr.l, provider}, ask(tr, fmt.Sprintf("r%d", i), cpu("500m")))
		}
	}
	got = sum()
	assert.Equal(t, 0, got.Cmp(resource.MustParse("16")), "the cohort holds %s; its totals sum to 16", got.String())
	spotUsed := spot.l.Used()[corev1.ResourceCPU]
	assert.LessOrEqual(t, spotUsed.Cmp(resource.MustParse("16")), 0, "spot holds %s, beyond its total and borrowing limit", spotUsed.String())
	silverUsed := silver.l.Used()[corev1.ResourceCPU]
	assert.LessOrEqual(t, silverUsed.Cmp(resource.MustParse("6")), 0, "silver holds %s, beyond its total and what gold and spot may lend", silverUsed.String())
}

// TestCohortMembersInOneAdmission: a slice that answers to two members of
// one cohort (their shared lock taken once) is decided without deadlock,
// against the books of both.
func TestCohortMembersInOneAdmission(t *testing.T) {
	_, gold, _, silver := tiers(t)
	r := ask(gold, "both", cpu("3"))
	as := admitted(t, []*ledger.Ledger{gold.l, silver.l}, r)
	assert.Len(t, as, 2)
}

// TestCohortShrinkClamp: a lender whose total shrinks below what is
// borrowed from it revokes nothing, but nothing more is admitted in the
// cohort until the cohort counts no more than its totals; lent clamps to
// what is idle.
func TestCohortShrinkClamp(t *testing.T) {
	_, gold, spot, silver := tiers(t)
	grant(t, spot, ask(spot, "s1", cpu("14")))
	require.NoError(t, gold.l.SetTotal(cpu("4")))
	// The totals now sum to 10 and spot holds 14.
	refused(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("1")))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("1")))
	refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s2", cpu("1")))
	assertList(t, cpu("4"), gold.l.Snapshot().Lent, "gold lends no more than its total")
	assertList(t, cpu("2"), silver.l.Snapshot().Lent, "silver lends no more than its lending limit")
	assertList(t, cpu("0"), gold.l.Free(), "gold has nothing available")
	// Spot releases down to 6: the cohort holds 6 of its 10, and silver's
	// own 2, gold's 1 fit again.
	holdIn(spot, "s1", cpu("6"))
	admitted(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("1")))
	admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("1")))
}

// reclaimers is the provider where gold and silver take back what
// they lent (gold from anyone, silver from lower priorities), with spot
// holding all the cohort may lend it: 14.
func reclaimers(t *testing.T) (gold, spot, silver tier, reclaims *[]ledger.Reclaim) {
	t.Helper()
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	gold = newTier(t, c, "gold", cpu("10"), 10, ledger.Options{ReclaimWithinCohort: ledger.ReclaimAny})
	spot = newTier(t, c, "spot", cpu("2"), 0, ledger.Options{BorrowingLimit: cpu("14")})
	silver = newTier(t, c, "silver", cpu("4"), 5, ledger.Options{LendingLimit: cpu("2"), ReclaimWithinCohort: ledger.ReclaimLowerPriority})
	var mu sync.Mutex
	reclaims = &[]ledger.Reclaim{}
	for _, tr := range []tier{gold, silver} {
		tr.l.SetReclaimHook(func(r ledger.Reclaim) {
			mu.Lock()
			defer mu.Unlock()
			*reclaims = append(*reclaims, r)
		})
	}
	grant(t, spot, ask(spot, "s1", cpu("14")))
	return gold, spot, silver, reclaims
}

// capOf is what slice name keeps in tr, "" when it is not capped.
func capOf(tr tier, name string) string {
	c, ok := tr.l.Cap(key(name))
	if !ok {
		return ""
	}
	q := c.Keep[corev1.ResourceCPU]
	return q.String()
}

// TestCohortReclaim is the story in the ledger: gold's slice
// arrives and spot is shrunk by exactly what gold lacks; gold is admitted
// once spot holds no more than it keeps; silver takes back its 2 the same
// way; spot never drops below its own 2 and cannot grow back while a
// lender waits.
func TestCohortReclaim(t *testing.T) {
	gold, spot, silver, reclaims := reclaimers(t)

	spot.w.take()
	r := refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	assert.Contains(t, r.Message, "waiting for reclaimed capacity still in use: cpu")
	assert.Equal(t, "4", capOf(spot, "s1"), "spot keeps 14 less the 10 gold lacks")
	assert.Equal(t, []string{"s1"}, spot.w.take(), "spot's class is woken to write the smaller offer")
	c, _ := spot.l.Cap(key("s1"))
	assert.Equal(t, "budget spot reclaimed cpu 14 to 4: budget gold of its cohort took back what it lent, for priority 10", c.Message)
	require.Len(t, *reclaims, 1)
	assert.Equal(t, ledger.CauseCohort, (*reclaims)[0].Cause)
	assertList(t, cpu("10"), (*reclaims)[0].Amount, "taken back")
	assertList(t, cpu("10"), spot.l.Snapshot().Reclaiming, "spot's pods still use what it yields")

	// Spot's class writes the smaller offer and its pods fit it: gold is
	// woken and admitted.
	gold.w.take()
	spot.l.ObserveSlice(slice("s1", strconv.FormatInt(rvs.Add(1)+1, 10), cpu("4"), inClass("spot"), consumer("c-s1"), reclaimed))
	assert.Equal(t, []string{"g1"}, gold.w.take())
	// Spot may not grow back while gold waits, even to what it held.
	refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s1", cpu("14")))
	refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s2", cpu("1")))
	as := admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	gold.l.Done(as[0], ledger.Applied)
	holdIn(gold, "g1", cpu("10"))
	assert.Equal(t, "", capOf(spot, "s1"), "the cap goes with gold's admission")

	// Silver holds none of its 4: its 2 are idle and its own; it takes
	// back the 2 it lent from spot (priority 0, below silver's 5).
	refused(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("4")))
	assert.Equal(t, "2", capOf(spot, "s1"), "spot keeps its own total, no less")
	holdIn(spot, "s1", cpu("2"))
	admitted(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("4")))

	// Spot holds its total: nothing is borrowed, no one lends.
	for _, tr := range []tier{gold, spot, silver} {
		assertList(t, cpu("0"), tr.l.Snapshot().Borrowed, tr.l.Name()+" borrowed")
	}
	refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s2", cpu("1")))
}

// TestCohortReclaimBounds: a member takes back no more than its total
// lacks, only under its policy, and gives back what its waiter no longer
// lacks; its waiter leaving lifts the caps.
func TestCohortReclaimBounds(t *testing.T) {
	t.Run("NoMoreThanItsTotal", func(t *testing.T) {
		gold, spot, _, _ := reclaimers(t)
		refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("11")))
		assert.Equal(t, "", capOf(spot, "s1"), "gold asks beyond its total: what it lent cannot cover it")
	})
	t.Run("LowerPriorityOnly", func(t *testing.T) {
		c, err := ledger.NewCohort("pool")
		require.NoError(t, err)
		lender := newTier(t, c, "lender", cpu("4"), 1, ledger.Options{ReclaimWithinCohort: ledger.ReclaimLowerPriority})
		borrower := newTier(t, c, "borrower", cpu("1"), 5, ledger.Options{})
		grant(t, borrower, ask(borrower, "b1", cpu("5")))
		refused(t, []*ledger.Ledger{lender.l}, ask(lender, "l1", cpu("2")))
		assert.Equal(t, "", capOf(borrower, "b1"), "the borrower's priority is higher")
		require.NoError(t, lender.l.SetCohortTerms(nil, nil, ledger.ReclaimAny))
		refused(t, []*ledger.Ledger{lender.l}, ask(lender, "l1", cpu("2")))
		assert.Equal(t, "3", capOf(borrower, "b1"), "with Any, the lender takes back what it lacks")
		require.NoError(t, lender.l.SetCohortTerms(nil, nil, ledger.ReclaimNever))
		lender.l.Leave(ledger.Holder{Class: "lender", Key: key("l1")})
		assert.Equal(t, "", capOf(borrower, "b1"), "the waiter left: the cap is lifted")
		refused(t, []*ledger.Ledger{lender.l}, ask(lender, "l1", cpu("2")))
		assert.Equal(t, "", capOf(borrower, "b1"), "Never takes nothing back")
	})
	t.Run("GiveBack", func(t *testing.T) {
		gold, spot, _, _ := reclaimers(t)
		refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
		assert.Equal(t, "4", capOf(spot, "s1"))
		refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("6")))
		assert.Equal(t, "8", capOf(spot, "s1"), "gold lacks 4 less: spot gets them back")
		gold.l.Leave(ledger.Holder{Class: "gold", Key: key("g1")})
		assert.Equal(t, "", capOf(spot, "s1"), "gold's waiter left: spot keeps all it holds")
		admitted(t, []*ledger.Ledger{spot.l}, ask(spot, "s1", cpu("14")))
	})
}

// TestCohortReclaimLeavesOthersGuarantees: while gold waits for what spot
// still holds of the 10 taken back for it, silver's own 2 stay silver's:
// gold's promise is not counted twice (as promised and as held by spot),
// and the cohort still never holds more than its 16.
func TestCohortReclaimLeavesOthersGuarantees(t *testing.T) {
	gold, spot, silver, _ := reclaimers(t)
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	require.Equal(t, "4", capOf(spot, "s1"))
	admitted(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("2")))
	refused(t, []*ledger.Ledger{silver.l}, ask(silver, "v2", cpu("1")))
	// Spot's pods end down to 9: gold still waits, silver still cannot
	// take more than its own.
	holdIn(spot, "s1", cpu("9"))
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	refused(t, []*ledger.Ledger{silver.l}, ask(silver, "v2", cpu("1")))
	holdIn(spot, "s1", cpu("4"))
	admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	var sum resource.Quantity
	for _, tr := range []tier{gold, spot, silver} {
		sum.Add(tr.l.Used()[corev1.ResourceCPU])
	}
	assert.Zero(t, sum.Cmp(resource.MustParse("16")), "the cohort holds %s of its 16", sum.String())
}

// TestCohortBorrowerWithPreemption: a borrower's own preemption (within
// its budget) does not take what it borrowed for a total it holds more
// than: borrowing is not being over the total. What it holds beyond all
// it may ever hold (its total and borrowing limit) still is.
func TestCohortBorrowerWithPreemption(t *testing.T) {
	c, err := ledger.NewCohort("pool")
	require.NoError(t, err)
	newTier(t, c, "lender", cpu("10"), 0, ledger.Options{})
	borrower := newTier(t, c, "borrower", cpu("2"), 0, ledger.Options{Preemption: true, BorrowingLimit: cpu("8")})
	grant(t, borrower, ask(borrower, "b1", cpu("10")))
	require.NoError(t, borrower.l.SetTotal(cpu("2")))
	borrower.l.SetPreemption(false)
	borrower.l.SetPreemption(true)
	assert.Equal(t, "", capOf(borrower, "b1"), "borrowing is not being over the total")
	require.NoError(t, borrower.l.SetCohortTerms(cpu("6"), nil, ledger.ReclaimNever))
	require.NoError(t, borrower.l.SetTotal(cpu("2")))
	assert.Equal(t, "8", capOf(borrower, "b1"), "beyond its total and borrowing limit, it is")
}

// TestCohortLeaveWhileBorrowing: a member that leaves its cohort while its
// slices hold what the others lent stays, lending and borrowing nothing
// more, until they no longer do: the cohort it leaves never admits what
// it still holds. Then it leaves.
func TestCohortLeaveWhileBorrowing(t *testing.T) {
	c, gold, spot, silver := tiers(t)
	grant(t, spot, ask(spot, "s1", cpu("14")))
	spot.l.JoinCohort(nil)
	assert.Equal(t, "pool", spot.l.Cohort(), "spot stays while it borrows")
	refused(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("1")))
	refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s2", cpu("1")))
	admitted(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("2")))
	// Spot's slice falls to its own 2: it borrows nothing, and leaves.
	holdIn(spot, "s1", cpu("2"))
	assert.Equal(t, "", spot.l.Cohort(), "spot left once it borrowed nothing")
	assert.Equal(t, []string{"gold", "silver"}, c.Members())
	admitted(t, []*ledger.Ledger{gold.l}, ask(gold, "g1", cpu("10")))
	refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s2", cpu("1")))
	// Joined again while leaving: it stays.
	c2, gold2, spot2, _ := tiers(t)
	grant(t, spot2, ask(spot2, "s1", cpu("14")))
	spot2.l.JoinCohort(nil)
	spot2.l.JoinCohort(c2)
	holdIn(spot2, "s1", cpu("13"))
	assert.Equal(t, "pool", spot2.l.Cohort())
	admitted(t, []*ledger.Ledger{gold2.l}, ask(gold2, "g1", cpu("1")))
}

// TestCohortLeaveWhileLending: a lender that leaves while the others hold
// what it lent stays until they release it: alone, it would admit its
// whole total while they still hold part of it.
func TestCohortLeaveWhileLending(t *testing.T) {
	c, _, spot, silver := tiers(t)
	grant(t, spot, ask(spot, "s1", cpu("14"))) // 2 of it silver's
	silver.l.JoinCohort(nil)
	assert.Equal(t, "pool", silver.l.Cohort(), "silver stays while spot holds what it lent")
	refused(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("3")))
	holdIn(spot, "s1", cpu("12"))
	assert.Equal(t, "", silver.l.Cohort(), "silver left once spot released what it lent")
	assert.Equal(t, []string{"gold", "spot"}, c.Members())
	admitted(t, []*ledger.Ledger{silver.l}, ask(silver, "v1", cpu("4")))
	refused(t, []*ledger.Ledger{spot.l}, ask(spot, "s2", cpu("1")))
}

// TestCohortNeverOverAdmitsUnderLiveEdits races admissions across the
// members with live edits of them: gold's lending limit cut and restored,
// silver leaving the cohort and joining it again. Whatever the
// interleaving, the three budgets' slices never count more than the 16
// their totals sum to (a member leaves only when that stays true).
func TestCohortNeverOverAdmitsUnderLiveEdits(t *testing.T) {
	c, gold, spot, silver := tiers(t)
	members := []tier{gold, spot, silver}
	stop := make(chan struct{})
	var edits sync.WaitGroup
	edits.Add(1)
	go func() {
		defer edits.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			lend := cpu("10")
			if i%2 == 0 {
				lend = cpu("5")
			}
			assert.NoError(t, gold.l.SetCohortTerms(nil, lend, ledger.ReclaimNever))
			if i%3 == 0 {
				silver.l.JoinCohort(nil)
			} else {
				silver.l.JoinCohort(c)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range 150 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := members[i%3]
			as, refusal := ledger.AdmitAll([]*ledger.Ledger{tr.l}, ask(tr, fmt.Sprintf("r%d", i), cpu("500m")))
			if refusal == nil && i%7 == 0 {
				tr.l.Done(as[0], ledger.NotApplied)
			}
		}()
	}
	wg.Wait()
	close(stop)
	edits.Wait()
	var sum resource.Quantity
	for _, tr := range members {
		sum.Add(tr.l.Used()[corev1.ResourceCPU])
	}
	assert.LessOrEqual(t, sum.Cmp(resource.MustParse("16")), 0, "the three hold %s; their totals sum to 16", sum.String())
}
