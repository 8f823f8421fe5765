package ledger

import (
	"container/heap"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Reclaim within a cohort.
//
// A member with Options.ReclaimWithinCohort LowerPriority or Any takes
// back, for a slice of its own that waits while the member holds less
// than its total, what the other members borrowed: through the same
// partial reclaim as within a budget (reclaim.go). Their slices are
// capped (a smaller offer, reason Reclaimed), the waiter is promised what
// they yield, and it is admitted once the cluster shows them holding
// less (their running pods fit the smaller offer). The plan takes:
//
//   - no more than the waiter lacks beyond what is available to it, and no
//     more, with what is being taken back for its member's other waiters,
//     than its member's total less what it counts;
//   - from a borrower no more than it counts beyond its own total, so no
//     borrower is cut below its total;
//   - from the borrowers' slices the lowest priority first (only those of
//     strictly lower priority than the waiter's for LowerPriority), then
//     the consumer holding the largest dominant share, then the newest;
//   - nothing unless all the waiter lacks can be taken so (Kueue's
//     preemptor first asks whether the workload would fit).
//
// Taking back what was lent comes before reclaiming from the member's own
// lower priorities (Kueue's candidates borrowing from the cohort come
// first too). When the waiter lacks less later, the borrowers capped for
// it get the surplus back first, then its member's own victims; when it
// leaves, is admitted or can no longer fit, their caps are lifted as for
// a reclaim within a budget. A victim keeps its caps in its own ledger,
// so its budget's status, its Cap and evictions read them as any other.

// memberCut is a cut in another member of the cohort.
type memberCut struct {
	m *Ledger
	cut
}

// reclaimsInCohortLocked reports whether the ledger takes back what it
// lent: it is in a cohort, with a policy other than Never.
func (l *Ledger) reclaimsInCohortLocked() bool {
	if l.cohort == nil {
		return false
	}
	p := l.opts.ReclaimWithinCohort
	return p == ReclaimLowerPriority || p == ReclaimAny
}

// others are the other members of the ledger's cohort.
func (l *Ledger) others() []*Ledger {
	if l.cohort == nil {
		return nil
	}
	out := make([]*Ledger, 0, len(l.cohort.members))
	for _, m := range l.cohort.members {
		if m != l {
			out = append(out, m)
		}
	}
	return out
}

// cohortPendingLocked is what is being taken back for h from the other
// members and is still held there.
func (l *Ledger) cohortPendingLocked(h Holder) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, m := range l.others() {
		for n, q := range m.pendingLocked(h) {
			add(out, n, q)
		}
	}
	return out
}

// cohortPendingAllLocked is what is being taken back from the other
// members for every waiter of the ledger's line.
func (l *Ledger) cohortPendingAllLocked() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, m := range l.others() {
		for h := range m.victims {
			if !l.line.has(h) {
				continue
			}
			for n, q := range m.pendingLocked(h) {
				add(out, n, q)
			}
		}
	}
	return out
}

// keptSumLocked is what the ledger's member slices keep of n: what each
// counts, or its cap when lower.
func (l *Ledger) keptSumLocked(n corev1.ResourceName) resource.Quantity {
	var sum resource.Quantity
	for _, e := range l.books.slices {
		if len(e.counted) > 0 {
			sum.Add(keepAmount(e, n))
		}
	}
	return sum
}

// cohortCutsLocked plans the cuts in the other members that free lacking
// for the waiter h of priority prio (see above); nil when they cannot
// free all of it.
func (l *Ledger) cohortCutsLocked(h Holder, prio int32, lacking corev1.ResourceList) []memberCut {
	// What the ledger may still take back: its total less what it counts
	// and what is being taken back for its waiters already.
	taking := l.cohortPendingAllLocked()
	for n, need := range lacking {
		room := l.books.total[n].DeepCopy()
		room.Sub(l.books.sum[n])
		room.Sub(taking[n])
		if room.Cmp(need) < 0 {
			return nil
		}
	}
	type cand struct {
		m *Ledger
		victim
	}
	// yields is what each member may still give: what it keeps beyond its
	// total.
	yields := map[*Ledger]corev1.ResourceList{}
	avail := corev1.ResourceList{}
	var cands []cand
	for _, m := range l.others() {
		y := corev1.ResourceList{}
		for n := range lacking {
			if !m.limitsResource(n) {
				continue
			}
			over := m.keptSumLocked(n)
			over.Sub(m.books.total[n])
			if over.Sign() > 0 {
				y[n] = over
			}
		}
		if len(y) == 0 {
			continue
		}
		pl := m.planner()
		shares := map[string]float64{}
		mine := corev1.ResourceList{}
		for key, e := range m.books.slices {
			if !e.member || len(e.counted) == 0 {
				continue
			}
			p := pl.priorityOf(e)
			if l.opts.ReclaimWithinCohort == ReclaimLowerPriority && p >= prio {
				continue
			}
			if e.capped != nil && (e.capped.limit || e.capped.pool || e.capped.waiter != h) {
				continue // yielding already, to something else
			}
			useful := false
			for n := range y {
				if q := keepAmount(e, n); q.Sign() > 0 {
					add(mine, n, q)
					useful = true
				}
			}
			if !useful {
				continue
			}
			share, ok := shares[e.consumer]
			if !ok {
				share = pl.share(e.consumer)
				shares[e.consumer] = share
			}
			cands = append(cands, cand{m: m, victim: victim{key: key, e: e, prio: p, share: share}})
		}
		for n, q := range y {
			if k := mine[n]; k.Cmp(q) < 0 {
				q = k
			}
			y[n] = q
			add(avail, n, q)
		}
		yields[m] = y
	}
	for n, need := range lacking {
		if a := avail[n]; a.Cmp(need) < 0 {
			return nil // even all the borrowers may give would not do
		}
	}
	order := make(victimHeap, len(cands))
	byVictim := make(map[*entry]*Ledger, len(cands))
	for i, c := range cands {
		order[i] = c.victim
		byVictim[c.e] = c.m
	}
	heap.Init(&order)
	left := lacking.DeepCopy()
	var cuts []memberCut
	for len(left) > 0 && order.Len() > 0 {
		v := heap.Pop(&order).(victim)
		m := byVictim[v.e]
		// At most what its member may still give, per resource.
		want := corev1.ResourceList{}
		for n, need := range left {
			give := yields[m][n]
			if need.Cmp(give) < 0 {
				give = need
			}
			if give.Sign() > 0 {
				want[n] = give.DeepCopy()
			}
		}
		if len(want) == 0 {
			continue
		}
		before := want.DeepCopy()
		keep := keepOf(v.e)
		if !takeFrom(keep, want) {
			continue
		}
		for n, q := range before {
			took := q.DeepCopy()
			took.Sub(want[n])
			sub(left, n, took)
			if l := left[n]; l.Sign() <= 0 {
				delete(left, n)
			}
			sub(yields[m], n, took)
		}
		cuts = append(cuts, memberCut{m: m, cut: cut{key: v.key, e: v.e, keep: keep}})
	}
	if len(left) > 0 {
		return nil
	}
	return cuts
}

// cohortGiveBackLocked plans what the borrowers capped for h get back
// when less is being taken back for it than they yield (surplus, lowered
// in place by what they get back): the new keeps, by member and slice.
func (l *Ledger) cohortGiveBackLocked(h Holder, surplus corev1.ResourceList) map[*Ledger]map[types.NamespacedName]corev1.ResourceList {
	if len(surplus) == 0 {
		return nil
	}
	var out map[*Ledger]map[types.NamespacedName]corev1.ResourceList
	for _, m := range l.others() {
		if len(surplus) == 0 {
			break
		}
		back := m.planner().giveBack(m.victimsOf(h), surplus)
		if len(back) == 0 {
			continue
		}
		for key, keep := range back {
			e := m.books.slices[key]
			for n, q := range keep {
				given := q.DeepCopy()
				given.Sub(e.capped.keep[n])
				sub(surplus, n, given)
				if s := surplus[n]; s.Sign() <= 0 {
					delete(surplus, n)
				}
			}
		}
		if out == nil {
			out = map[*Ledger]map[types.NamespacedName]corev1.ResourceList{}
		}
		out[m] = back
	}
	return out
}

// applyCohortLocked applies the cohort part of plan p for the waiter w:
// the give-backs, then the cuts. It returns the victims whose cap
// changed (their members' keys), to wake.
func (l *Ledger) applyCohortLocked(w *waiter, p *reclaimPlan) []types.NamespacedName {
	var out []types.NamespacedName
	for m, back := range p.cohortBack {
		out = append(out, m.giveBackLocked(w.Holder, back)...)
	}
	if len(p.cohortCuts) == 0 {
		return out
	}
	for _, c := range p.cohortCuts {
		m := c.m
		if c.e.capped == nil {
			c.e.capped, c.e.givenBack = &capped{was: c.e.counted.DeepCopy(), since: time.Now()}, false
			m.noteCappedLocked(c.key)
		}
		c.e.capped.keep, c.e.capped.priority, c.e.capped.waiter, c.e.capped.lender = c.keep, w.priority, w.Holder, l.name
		if m.victims[w.Holder] == nil {
			m.victims[w.Holder] = map[types.NamespacedName]bool{}
		}
		m.victims[w.Holder][c.key] = true
		out = append(out, c.key)
	}
	l.noteReclaimLocked(Reclaim{Cause: CauseCohort, Consumer: w.consumer, Waiter: w.Holder, Priority: w.priority,
		Slices: len(p.cohortCuts), Amount: p.lacking})
	return out
}

// liftCohortLocked lifts the caps made for h in the other members (see
// liftLocked), and returns the victims to wake.
func (l *Ledger) liftCohortLocked(h Holder, givenBack bool) []types.NamespacedName {
	var out []types.NamespacedName
	for _, m := range l.others() {
		out = append(out, m.liftOwnLocked(h, givenBack)...)
	}
	return out
}

// waitsInCohortLocked reports whether h waits in another member's line:
// that member, not this one, decides what is taken for it.
func (l *Ledger) waitsInCohortLocked(h Holder) bool {
	for _, m := range l.others() {
		if m.line.has(h) {
			return true
		}
	}
	return false
}

// decidedCohortCutsLocked is what decide (decide.go), on the domain as it
// stands with r waiting, takes back for r from the other members, when
// the remembered planner (cohortCutsLocked) finds nothing: it takes back
// no more than its member's total less what it counts, so a cohort whose
// totals shrank below what its borrowers hold (issue 50, case b: silver's
// total cut to 0 while spot borrows) left a waiter within its own
// guarantee waiting for ever. nil when decide reclaims nothing for r.
func (l *Ledger) decidedCohortCutsLocked(r Request) []memberCut {
	f, ws := l.frameLocked()
	if f.paused != "" {
		return nil
	}
	in := false
	for _, w := range ws {
		if w.Holder == r.Holder {
			in = true
			break
		}
	}
	if !in {
		ws = append(ws, frameWaiter{Holder: r.Holder, members: []string{l.name}, offer: r.Offer,
			priority: r.Priority, consumer: r.Consumer, created: r.Created})
	}
	p := decide(f, ws)
	if d := p.decisions[r.Holder]; !d.reclaiming {
		return nil
	}
	var cuts []memberCut
	for key, c := range p.caps {
		if c.member == l.name {
			continue
		}
		forR := false
		for _, part := range c.parts {
			if part.reason == capForWaiter && part.cohort && part.waiter == r.Holder {
				forR = true
			}
		}
		if !forR {
			continue
		}
		for _, m := range l.others() {
			if m.name != c.member {
				continue
			}
			e := m.books.slices[key]
			if e == nil || !e.member || (e.capped != nil && (e.capped.limit || e.capped.pool || e.capped.waiter != r.Holder)) {
				return nil // yielding already, to something else: the planner's rules stand
			}
			cuts = append(cuts, memberCut{m: m, cut: cut{key: key, e: e, keep: c.keep}})
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].key.String() < cuts[j].key.String() })
	return cuts
}
