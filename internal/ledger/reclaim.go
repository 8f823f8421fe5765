package ledger

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Priorities and reclaim.
//
// Classes drawing from a ledger have priorities (Class.Priority); waiting
// slices are promised capacity in priority order, then fair order. With
// Options.Preemption, a slice that waits may reclaim capacity from Accepted
// slices of strictly lower priority: victims are the lowest priority first,
// then the consumer holding the largest dominant share, then the newest
// slice, and each is shrunk by at most what the waiter still lacks, per
// resource. No victim is touched unless the waiter would fit once its
// victims shrink, under every limit it answers to: the total of each
// ledger it asks (a slice may draw from several budgets, a node pool among
// them) and its consumer's limit there (Kueue's preemptor asks the same
// first). What is reclaimed is promised to the waiter: no waiter of lower
// or equal priority can take it. A waiter that leaves or can no longer fit
// gives its victims back all that was taken for it; one that lacks less
// gives back the rest. A victim keeps counting what it holds (its pods may still
// use it) until the cluster shows less: the waiter is admitted once the
// victims' holdings, in use included, have fallen enough.

// ReasonReclaimed is the reason of a victim's condition: it stays Accepted
// with a smaller offer.
const ReasonReclaimed = "Reclaimed"

// The causes of a Reclaim.
const (
	// CausePriority: a waiting slice of higher priority reclaimed from
	// lower ones (Options.Preemption).
	CausePriority = "Priority"
	// CauseConsumerLimit: a consumer's limit fell below what it holds.
	CauseConsumerLimit = "ConsumerLimit"
	// CauseTotal: the total fell below what the slices hold
	// (Options.Preemption).
	CauseTotal = "Total"
	// CauseCohort: a cohort member took back what other members
	// borrowed, for a slice of its own (Options.ReclaimWithinCohort).
	CauseCohort = "Cohort"
)

// Reclaim is one reclaim: the slices shrunk at once for one cause.
type Reclaim struct {
	// Cause is CausePriority, CauseConsumerLimit, CauseTotal or
	// CauseCohort.
	Cause string
	// Consumer is the consumer whose limit fell (CauseConsumerLimit), or
	// the waiter's (CausePriority).
	Consumer string
	// Waiter and Priority are the slice reclaimed for (CausePriority).
	Waiter   Holder
	Priority int32
	// Slices is how many slices were shrunk; Amount is what was taken
	// from them, per resource.
	Slices int
	Amount corev1.ResourceList
}

// String says what was reclaimed, why, and from how many slices.
func (r Reclaim) String() string {
	n := "1 slice"
	if r.Slices != 1 {
		n = fmt.Sprintf("%d slices", r.Slices)
	}
	switch r.Cause {
	case CauseConsumerLimit:
		return fmt.Sprintf("reclaimed %s from %s of consumer %q: its limit is below what it held", Amounts(r.Amount), n, r.Consumer)
	case CauseTotal:
		return fmt.Sprintf("reclaimed %s from %s: the total fell below what the slices held", Amounts(r.Amount), n)
	case CauseCohort:
		return fmt.Sprintf("took back %s lent to its cohort, from %s of other budgets, for %s (priority %d, consumer %q)",
			Amounts(r.Amount), n, r.Waiter.Key, r.Priority, r.Consumer)
	default:
		return fmt.Sprintf("reclaimed %s from %s of lower priority for %s (priority %d, consumer %q)",
			Amounts(r.Amount), n, r.Waiter.Key, r.Priority, r.Consumer)
	}
}

// SetReclaimHook makes the ledger call hook once for each reclaim, after
// the reclaim is made, without the ledger's lock held; nil stops it.
func (l *Ledger) SetReclaimHook(hook func(Reclaim)) {
	l.lock()
	defer l.unlock()
	l.onReclaim = hook
}

// capped is a victim's reclaim: what it keeps, and for whom.
type capped struct {
	keep corev1.ResourceList
	// was is what it counted when it was first capped, for the message.
	was      corev1.ResourceList
	priority int32
	waiter   Holder
	// since is when it was first capped (eviction counts from it).
	since time.Time
	// lender is the cohort member that took it back for its waiter, ""
	// for a reclaim within the victim's own budget (reclaimcohort.go).
	lender string
	// limit is set for a reclaim by the consumer's own limit
	// (SetConsumerLimit), which lasts as long as the limit; pool for one
	// by a total that fell below what is held, which lasts until it grows.
	limit, pool bool
}

// Cap is what a victim keeps: its offer may not exceed Keep until the
// waiter it yielded to is admitted or leaves. Message names the budget,
// each resource's old and new amount and the priority it yielded to.
type Cap struct {
	Keep    corev1.ResourceList
	Message string
}

// Cap returns what the slice key keeps after a reclaim, if it is a victim.
func (l *Ledger) Cap(key types.NamespacedName) (Cap, bool) {
	l.lock()
	defer l.unlock()
	e := l.books.slices[key]
	if e == nil || e.capped == nil {
		return Cap{}, false
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(e.capped.keep)) {
		was, keep := e.capped.was[n], e.capped.keep[n]
		parts = append(parts, fmt.Sprintf("%s %s to %s", n, was.String(), keep.String()))
	}
	if e.capped.pool {
		return Cap{Keep: e.capped.keep.DeepCopy(), Message: fmt.Sprintf("budget %s reclaimed %s: its total fell below what its slices hold",
			l.name, strings.Join(parts, ", "))}, true
	}
	if e.capped.limit {
		return Cap{Keep: e.capped.keep.DeepCopy(), Message: fmt.Sprintf("budget %s reclaimed %s for consumer %q's limit",
			l.name, strings.Join(parts, ", "), e.consumer)}, true
	}
	if e.capped.lender != "" {
		return Cap{Keep: e.capped.keep.DeepCopy(), Message: fmt.Sprintf("budget %s reclaimed %s: budget %s of its cohort took back what it lent, for priority %d",
			l.name, strings.Join(parts, ", "), e.capped.lender, e.capped.priority)}, true
	}
	return Cap{Keep: e.capped.keep.DeepCopy(), Message: fmt.Sprintf("budget %s reclaimed %s for priority %d",
		l.name, strings.Join(parts, ", "), e.capped.priority)}, true
}

// fitTotalLocked, with Preemption, shrinks the lowest priorities (then
// the largest consumers, then the newest slices) by what the slices hold
// beyond a total that fell below it; without it nothing is revoked. It
// returns the victims whose cap changed, to wake.
func (l *Ledger) fitTotalLocked() []types.NamespacedName {
	if !l.opts.Preemption {
		return nil
	}
	excess := corev1.ResourceList{}
	for _, n := range l.books.names {
		over := l.books.sum[n].DeepCopy()
		// A cohort member's slices may hold more than its total: what
		// they borrow is not over it, only what is beyond all it may
		// ever hold (see cohort.go).
		over.Sub(l.ceilingLocked(n))
		if over.Sign() > 0 {
			excess[n] = over
		}
	}
	want := l.planner().overTotal(excess)
	var changed []types.NamespacedName
	shrunk, taken := 0, corev1.ResourceList{}
	for key, e := range l.books.slices {
		keep, capNow := want[e]
		hadPool := e.capped != nil && e.capped.pool
		switch {
		case capNow && hadPool && equalLists(e.capped.keep, keep):
		case capNow:
			from := e.counted
			if hadPool {
				from = e.capped.keep
			}
			for n, q := range from {
				if k, ok := keep[n]; ok && q.Cmp(k) > 0 {
					add(taken, n, q)
					sub(taken, n, k)
				}
			}
			shrunk++
			e.capped, e.givenBack = &capped{keep: keep, was: e.counted.DeepCopy(), pool: true, since: time.Now()}, false
			l.noteCappedLocked(key)
			changed = append(changed, key)
		case hadPool:
			e.capped = nil
			changed = append(changed, key)
		}
	}
	if shrunk > 0 && anyPositive(taken) {
		l.noteReclaimLocked(Reclaim{Cause: CauseTotal, Slices: shrunk, Amount: taken})
	}
	return changed
}

// SetConsumerLimit sets what consumer may hold from the ledger, overriding
// the budget's consumer limit for it; an empty limit removes the override.
// Lowered below what the consumer holds, its slices are shrunk, newest
// first, by what it holds beyond the limit: each keeps a smaller offer
// (reason ReasonReclaimed) while the limit lasts, and the capacity frees
// as the cluster shows them holding less (their pods ending). An override
// for a consumer the ledger knows no slice of is kept, and applies when
// one appears; it is logged as such, so that a mistyped consumer ID shows.
// It refuses an empty consumer and negative quantities.
func (l *Ledger) SetConsumerLimit(consumer string, limit corev1.ResourceList) error {
	if consumer == "" {
		return fmt.Errorf("budget %q: consumer limit for an empty consumer: name the consumer's cluster ID", l.name)
	}
	if err := checkQuantities(fmt.Sprintf("consumer limit of %q", consumer), limit); err != nil {
		return fmt.Errorf("budget %q: %w", l.name, err)
	}
	l.lock()
	if len(limit) == 0 {
		delete(l.limits, consumer)
	} else {
		l.limits[consumer] = limit.DeepCopy()
	}
	victims, known, shrunk := l.fitConsumerLocked(consumer)
	rechecked, waiters := l.recheckReclaimsLocked()
	l.changedLocked()
	wake := l.wakeLocked()
	wakeVictims := l.wakeKeys(append(victims, rechecked...))
	wakeWaiters := l.wakeHolders(waiters)
	hook := l.takeReclaimsLocked()
	log := l.log
	l.unlock()
	switch {
	case len(limit) == 0:
		log.Info("consumer limit override removed: the budget's own consumer limit applies", "consumer", consumer)
	case known:
		log.Info("consumer limit set", "consumer", consumer, "limit", Amounts(limit), "shrunk", shrunk)
	default:
		log.Info("consumer limit set for a consumer the budget knows no slice of: kept, it applies when one appears (if one was expected, check the consumer ID)",
			"consumer", consumer, "limit", Amounts(limit))
	}
	wake()
	wakeVictims()
	wakeWaiters()
	hook()
	return nil
}

// fitConsumerLocked brings consumer's slices within the limit in force for
// it: the caps of its previous limit are lifted, and its slices are
// shrunk, newest first, by what it holds beyond the limit. It returns the
// slices whose cap changed (to wake), whether the ledger has a slice of
// the consumer (held or waiting), and how many slices it shrank.
func (l *Ledger) fitConsumerLocked(consumer string) (victims []types.NamespacedName, known bool, shrunk int) {
	known = l.line.consumers[consumer] != nil
	var mine []types.NamespacedName
	for key, e := range l.books.slices {
		if e.consumer != consumer {
			continue
		}
		known = true
		if e.capped != nil && e.capped.limit {
			e.capped = nil
			victims = append(victims, key)
		}
		if e.member && len(e.counted) > 0 {
			mine = append(mine, key)
		}
	}
	excess := corev1.ResourceList{}
	held := l.books.byConsumer[consumer]
	for n, lim := range l.limitLocked(consumer) {
		over := held[n].DeepCopy()
		over.Sub(lim)
		if over.Sign() > 0 {
			excess[n] = over
		}
	}
	taken := excess.DeepCopy()
	for _, c := range l.planner().overLimit(mine, excess) {
		c.e.capped, c.e.givenBack = &capped{keep: c.keep, was: c.e.counted.DeepCopy(), limit: true, since: time.Now()}, false
		l.noteCappedLocked(c.key)
		victims = append(victims, c.key)
		shrunk++
	}
	if shrunk > 0 {
		for n, q := range excess {
			sub(taken, n, q)
		}
		l.noteReclaimLocked(Reclaim{Cause: CauseConsumerLimit, Consumer: consumer, Slices: shrunk, Amount: taken})
	}
	return victims, known, shrunk
}

// ConsumerLimits returns a copy of the consumers' own limits
// (SetConsumerLimit), by consumer.
func (l *Ledger) ConsumerLimits() map[string]corev1.ResourceList {
	l.lock()
	defer l.unlock()
	out := make(map[string]corev1.ResourceList, len(l.limits))
	for c, lim := range l.limits {
		out[c] = lim.DeepCopy()
	}
	return out
}

// SetLogger gives the ledger the logger of the manager that feeds it, once:
// a later call (another manager feeding the same budget) keeps the first.
// The consumer limits set before are logged then, since they could not be
// when they were set.
func (l *Ledger) SetLogger(log logr.Logger) {
	l.lock()
	if l.log.GetSink() != nil {
		l.unlock()
		return
	}
	l.log = log
	limits := make(map[string]string, len(l.limits))
	for c, lim := range l.limits {
		limits[c] = Amounts(lim)
	}
	l.unlock()
	for _, c := range slices.Sorted(maps.Keys(limits)) {
		log.Info("consumer limit set before the budget was fed", "consumer", c, "limit", limits[c])
	}
}

// pendingLocked is what is being reclaimed for h and is still held by its
// victims: what they count beyond what they keep.
func (l *Ledger) pendingLocked(h Holder) corev1.ResourceList {
	out := corev1.ResourceList{}
	for key := range l.victims[h] {
		e := l.books.slices[key]
		if e == nil || !e.capped.forWaiter(h) {
			continue
		}
		for n, keep := range e.capped.keep {
			over := e.counted[n].DeepCopy()
			over.Sub(keep)
			if over.Sign() > 0 {
				add(out, n, over)
			}
		}
	}
	return out
}

// forWaiter reports whether c is a reclaim for the waiter h.
func (c *capped) forWaiter(h Holder) bool {
	return c != nil && !c.limit && !c.pool && c.waiter == h
}

// reclaimPlan is what reclaiming for one waiting request in one ledger
// would do, planned over the books and the line, changing nothing.
type reclaimPlan struct {
	// fits: the request lacks capacity that victims of lower priority
	// can free, and would then fit under every limit of the ledger: its
	// total, and its consumer's limit once the victims of that consumer
	// shrink too.
	fits bool
	// lacking is what the cuts free: what it lacks beyond what is free
	// (net of other waiters' promises) and what is already being
	// reclaimed for it.
	lacking corev1.ResourceList
	cuts    []cut
	// back are the new keeps of victims already capped for it that yield
	// more than it lacks now (its request shrank, or capacity freed
	// elsewhere): they get the surplus back.
	back map[types.NamespacedName]corev1.ResourceList
	// cohortCuts and cohortBack are the same in the other members of its
	// cohort, for what they borrowed (reclaimcohort.go).
	cohortCuts []memberCut
	cohortBack map[*Ledger]map[types.NamespacedName]corev1.ResourceList
}

// planReclaimLocked plans the reclaim for r, asking increase over what
// its slice grows from, the way Kueue's preemptor first asks whether the
// workload would fit once its victims go: victims are planned for what r
// lacks and no more, and the plan fits only if r would then be within
// the total and within its consumer's limit. A plan that does not fit is
// never applied: nothing is taken for a waiter that would still wait.
func (l *Ledger) planReclaimLocked(r Request, increase corev1.ResourceList) reclaimPlan {
	inBudget, inCohort := l.opts.Preemption, l.reclaimsInCohortLocked()
	if (!inBudget && !inCohort) || l.closed != "" {
		return reclaimPlan{}
	}
	free, _ := l.line.spare(l.freeLocked(), r.Holder)
	pending := l.pendingLocked(r.Holder)
	if l.cohort != nil {
		for n, q := range l.cohortPendingLocked(r.Holder) {
			add(pending, n, q)
		}
	}
	// target is what victims must free in all, per resource; what they
	// still yield (pending) beyond it goes back to them.
	target, surplus := corev1.ResourceList{}, corev1.ResourceList{}
	p := reclaimPlan{lacking: corev1.ResourceList{}}
	for n, want := range increase {
		need := want.DeepCopy()
		need.Sub(free[n])
		if need.Sign() > 0 {
			target[n] = need
		}
	}
	for n, q := range pending {
		over := q.DeepCopy()
		over.Sub(target[n])
		if over.Sign() > 0 {
			surplus[n] = over
		}
	}
	for n, need := range target {
		left := need.DeepCopy()
		left.Sub(pending[n])
		if left.Sign() > 0 {
			p.lacking[n] = left
		}
	}
	pl := l.planner()
	// The borrowers taken last give back first (see reclaimcohort.go).
	p.cohortBack = l.cohortGiveBackLocked(r.Holder, surplus)
	p.back = pl.giveBack(l.victimsOf(r.Holder), surplus)
	if len(target) == 0 {
		return p // nothing lacking that victims could free: it waits for something else
	}
	if len(p.lacking) > 0 {
		if inCohort {
			p.cohortCuts = l.cohortCutsLocked(r.Holder, r.Priority, p.lacking)
			if p.cohortCuts == nil {
				p.cohortCuts = l.decidedCohortCutsLocked(r)
			}
		}
		if p.cohortCuts == nil {
			if !inBudget {
				return p // what it lent cannot cover it
			}
			if p.cuts = pl.forWaiter(r.Holder, r.Priority, p.lacking); p.cuts == nil {
				return p // even all that lower priorities keep would not do
			}
		}
	}
	p.fits = len(l.consumerShortAfter(r, p)) == 0
	return p
}

// victimsOf are the slices capped for the waiter h now.
func (l *Ledger) victimsOf(h Holder) []types.NamespacedName {
	var out []types.NamespacedName
	for key := range l.victims[h] {
		if e := l.books.slices[key]; e != nil && e.capped.forWaiter(h) {
			out = append(out, key)
		}
	}
	return out
}

// consumerShortAfter is what keeps r's consumer beyond its limit once the
// plan p is applied and its victims have shrunk: what the consumer's own
// slices among them yield, it no longer holds. nil when it fits.
func (l *Ledger) consumerShortAfter(r Request, p reclaimPlan) limitShort {
	limit := l.limitLocked(r.Consumer)
	if len(limit) == 0 {
		return nil
	}
	keeps := map[types.NamespacedName]corev1.ResourceList{}
	for _, key := range l.victimsOf(r.Holder) {
		keeps[key] = l.books.slices[key].capped.keep
	}
	for key, keep := range p.back {
		keeps[key] = keep
	}
	for _, c := range p.cuts {
		keeps[c.key] = c.keep
	}
	held := l.books.byConsumer[r.Consumer].DeepCopy()
	for key, keep := range keeps {
		e := l.books.slices[key]
		if e.consumer != r.Consumer {
			continue
		}
		for n, k := range keep {
			yields := e.counted[n].DeepCopy()
			yields.Sub(k)
			if yields.Sign() > 0 {
				sub(held, n, yields)
			}
		}
	}
	return consumerShort(limit, held, r.Offer, l.books.growsFrom(r.Key), l.line.promisedToOthers(r.Consumer, r.Holder))
}

// reclaimPlansLocked plans, for r refused by some of ls (verdicts, in
// ls's order), a reclaim in each ledger that refused it: nil unless r
// would fit every ledger it answers to once the victims shrink (each one
// that refused it lacks only capacity its victims can free, within the
// consumer's limit there), so that no ledger takes capacity for a waiter
// another one keeps out. The caller holds the ledgers' locks.
func reclaimPlansLocked(ls []*Ledger, r Request, verdicts []verdict) []*reclaimPlan {
	plans := make([]*reclaimPlan, len(ls))
	for i, l := range ls {
		v := verdicts[i]
		if v.reason == "" {
			continue
		}
		if v.reason != ReasonExhausted {
			return nil
		}
		p := l.planReclaimLocked(r, v.increase)
		if !p.fits {
			return nil
		}
		plans[i] = &p
	}
	return plans
}

// reclaimLocked applies the plan p for the waiter w, refused by this
// ledger for lack of capacity: its victims are capped by what it lacks,
// and those yielding more than it lacks get the rest back. With no plan
// (nil: it would not fit once victims shrink, here or in another ledger
// it answers to), whatever was taken for it goes back to its victims. It
// reports the victims whose cap changed, to wake, and whether w is being
// reclaimed for: the caller then promises it its increase.
func (l *Ledger) reclaimLocked(w *waiter, p *reclaimPlan) (victims []types.NamespacedName, reclaiming bool) {
	if p == nil || !p.fits {
		return l.uncapLocked(w.Holder), false
	}
	victims = l.giveBackLocked(w.Holder, p.back)
	victims = append(victims, l.applyCohortLocked(w, p)...)
	if len(p.cuts) == 0 {
		return victims, true
	}
	for _, c := range p.cuts {
		if c.e.capped == nil {
			c.e.capped, c.e.givenBack = &capped{was: c.e.counted.DeepCopy(), since: time.Now()}, false
			l.noteCappedLocked(c.key)
		} else if prev := c.e.capped.waiter; prev != w.Holder {
			delete(l.victims[prev], c.key)
		}
		keep := c.keep
		if back, ok := p.back[c.key]; ok {
			// Given back some resources, cut in others (the two are
			// disjoint: a resource is either lacking or in surplus).
			keep = back.DeepCopy()
			for n := range p.lacking {
				keep[n] = c.keep[n]
			}
		}
		c.e.capped.keep, c.e.capped.priority, c.e.capped.waiter = keep, w.priority, w.Holder
		if l.victims[w.Holder] == nil {
			l.victims[w.Holder] = map[types.NamespacedName]bool{}
		}
		l.victims[w.Holder][c.key] = true
		victims = append(victims, c.key)
	}
	l.noteReclaimLocked(Reclaim{Cause: CausePriority, Consumer: w.consumer, Waiter: w.Holder, Priority: w.priority,
		Slices: len(p.cuts), Amount: p.lacking})
	return victims, true
}

// giveBackLocked raises the keeps of h's victims to back's: a victim that
// keeps all it counts again yields nothing to h any more, and its cap is
// lifted. It returns the victims whose cap changed.
func (l *Ledger) giveBackLocked(h Holder, back map[types.NamespacedName]corev1.ResourceList) []types.NamespacedName {
	var out []types.NamespacedName
	for key, keep := range back {
		e := l.books.slices[key]
		e.capped.keep = keep
		out = append(out, key)
		if !yields(e) {
			e.capped, e.givenBack = nil, true
			delete(l.victims[h], key)
		}
	}
	if len(l.victims[h]) == 0 {
		delete(l.victims, h)
	}
	return out
}

// yields reports whether the capped e counts more than it keeps of some
// resource.
func yields(e *entry) bool {
	for n, keep := range e.capped.keep {
		if q := e.counted[n]; q.Cmp(keep) > 0 {
			return true
		}
	}
	return false
}

// recheckReclaimsLocked plans again, after a setting changed (a limit, the
// total), for each waiter capacity is being reclaimed for. One that would
// no longer fit once its victims shrink gives them back all that was taken
// for it (their caps are lifted) and loses its promise; one that lacks
// less than is being reclaimed for it gives back the rest. Nothing new is
// taken here: the waiters whose reclaim changed are returned, to be woken
// and decided again in every ledger they answer to, with the victims
// whose cap changed; the caller then promises what is free again.
func (l *Ledger) recheckReclaimsLocked() (victims []types.NamespacedName, waiters []Holder) {
	holders := make([]Holder, 0, len(l.victims))
	for h := range l.victims {
		if _, mine := l.line.by[h]; !mine && l.waitsInCohortLocked(h) {
			continue // another member's waiter: that member rechecks it
		}
		holders = append(holders, h)
	}
	for _, m := range l.others() {
		for h := range m.victims {
			if _, mine := l.line.by[h]; mine && l.victims[h] == nil && !slices.Contains(holders, h) {
				holders = append(holders, h) // taking back from the cohort only
			}
		}
	}
	// Highest priority first, as they were promised; then by name.
	sort.Slice(holders, func(i, j int) bool {
		a, b := l.line.by[holders[i]], l.line.by[holders[j]]
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		case a.priority != b.priority:
			return a.priority > b.priority
		}
		return a.before(b)
	})
	for _, h := range holders {
		w := l.line.by[h]
		if w == nil {
			victims = append(victims, l.uncapLocked(h)...)
			continue
		}
		p := l.planReclaimLocked(Request{Holder: h, Consumer: w.consumer, Created: w.created, Offer: w.offer, Priority: w.priority}, w.increase)
		if !p.fits {
			victims = append(victims, l.uncapLocked(h)...)
			if w.reclaiming {
				w.reclaiming = false
				l.line.unpromise(w)
			}
			waiters = append(waiters, h)
			continue
		}
		if back := l.giveBackLocked(h, p.back); len(back) > 0 {
			victims = append(victims, back...)
			waiters = append(waiters, h)
		}
	}
	return victims, waiters
}

// wakeHolders returns a function that wakes the waiters hs through their
// classes, to call without the lock.
func (l *Ledger) wakeHolders(hs []Holder) func() {
	wakes := make([]func(types.NamespacedName), len(hs))
	for i, h := range hs {
		wakes[i] = l.books.classes[h.Class].Wake
	}
	return func() {
		for i, h := range hs {
			if wakes[i] != nil {
				wakes[i](h.Key)
			}
		}
	}
}

// uncapLocked lifts the caps made for h, no longer waiting (it left, or
// can no longer fit), and returns the victims to wake: what each still
// counts is its own again (givenBack), and its growth beyond that waits at
// its own priority.
func (l *Ledger) uncapLocked(h Holder) []types.NamespacedName {
	return l.liftLocked(h, true)
}

// admittedLocked lifts the caps made for h, admitted, and returns the
// victims to wake: what they still count beyond what they keep is still
// being taken back (h's write may yet be refused, and its caps put back).
func (l *Ledger) admittedLocked(h Holder) []types.NamespacedName {
	return l.liftLocked(h, false)
}

// liftLocked lifts the caps made for h, in the ledger and in the other
// members of its cohort.
func (l *Ledger) liftLocked(h Holder, givenBack bool) []types.NamespacedName {
	return append(l.liftOwnLocked(h, givenBack), l.liftCohortLocked(h, givenBack)...)
}

// liftOwnLocked lifts the caps made for h in the ledger.
func (l *Ledger) liftOwnLocked(h Holder, givenBack bool) []types.NamespacedName {
	set, ok := l.victims[h]
	if !ok {
		return nil
	}
	delete(l.victims, h)
	var out []types.NamespacedName
	for key := range set {
		if e := l.books.slices[key]; e != nil && e.capped.forWaiter(h) {
			e.capped, e.givenBack = nil, givenBack
			out = append(out, key)
		}
	}
	return out
}

// uncapKeyLocked lifts the caps made for any class's waiter of key.
func (l *Ledger) uncapKeyLocked(key types.NamespacedName) []types.NamespacedName {
	var out []types.NamespacedName
	for h := range l.victims {
		if h.Key == key {
			out = append(out, l.uncapLocked(h)...)
		}
	}
	if l.cohort != nil {
		for _, h := range l.line.byKey[key] {
			out = append(out, l.liftCohortLocked(h, true)...)
		}
	}
	return out
}

// Reclaiming returns, for the resources the ledger limits, what slices
// yielding capacity still hold beyond what they keep: capacity granted away
// (to a higher priority, a lower consumer limit or a smaller total) that
// their running pods still use.
func (l *Ledger) Reclaiming() corev1.ResourceList {
	l.lock()
	defer l.unlock()
	out := corev1.ResourceList{}
	for _, n := range l.books.names {
		out[n] = resource.Quantity{}
	}
	for _, e := range l.books.slices {
		if e.capped == nil {
			continue
		}
		for n, keep := range e.capped.keep {
			if _, limited := out[n]; !limited {
				continue
			}
			over := e.counted[n].DeepCopy()
			over.Sub(keep)
			if over.Sign() > 0 {
				add(out, n, over)
			}
		}
	}
	return out
}

// waitBack is what an admission of a waiter for reclaimed capacity took
// down: its place in line and its victims' caps. A write that is not
// applied puts them back: the waiter decides again, and until it does its
// victims must not grow into the capacity reclaimed for it (once seen
// across a restart: the victim given its old offer back, then shrunk a
// second time).
type waitBack struct {
	req        Request
	increase   corev1.ResourceList
	reclaiming bool
	caps       map[types.NamespacedName]*capped
}

// takeDownLocked is what admitting r, for increase over what its slice
// grows from, takes down in l, before it does: nil
// unless r's holder has victims capped for it.
func (l *Ledger) takeDownLocked(r Request, increase corev1.ResourceList) *waitBack {
	set := l.victims[r.Holder]
	if len(set) == 0 {
		return nil
	}
	b := &waitBack{req: r, increase: increase, caps: map[types.NamespacedName]*capped{}}
	if w := l.line.by[r.Holder]; w != nil {
		b.reclaiming = w.reclaiming
	}
	for key := range set {
		if e := l.books.slices[key]; e != nil && e.capped.forWaiter(r.Holder) {
			b.caps[key] = e.capped
		}
	}
	return b
}

// putBackLocked puts back what a's admission took down, unless its slice
// is gone, or it was decided again since (it waits, or has victims of its
// own again), or a victim was capped again since.
func (l *Ledger) putBackLocked(a *Attempt) {
	b := a.back
	a.back = nil
	if b == nil {
		return
	}
	h := b.req.Holder
	if _, gone := l.books.gone[b.req.UID]; (gone && b.req.UID != "") || l.books.slices[h.Key] == nil || l.line.has(h) || l.victims[h] != nil {
		return
	}
	l.line.join(b.req, b.increase)
	if w := l.line.by[h]; w != nil {
		w.reclaiming = b.reclaiming
	}
	set := map[types.NamespacedName]bool{}
	for key, c := range b.caps {
		if e := l.books.slices[key]; e != nil && e.capped == nil {
			e.capped, e.givenBack = c, false
			set[key] = true
			l.noteCappedLocked(key)
		}
	}
	if len(set) > 0 {
		l.victims[h] = set
	}
	l.changedLocked()
}

// noteReclaimLocked keeps r for the hook, which takeReclaimsLocked calls.
func (l *Ledger) noteReclaimLocked(r Reclaim) {
	if l.onReclaim != nil {
		l.reclaims = append(l.reclaims, r)
	}
}

// Amounts renders rl as "cpu 4, memory 1Gi", by resource name.
func Amounts(rl corev1.ResourceList) string {
	parts := make([]string, 0, len(rl))
	for _, n := range slices.Sorted(maps.Keys(rl)) {
		q := rl[n]
		parts = append(parts, fmt.Sprintf("%s %s", n, q.String()))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}
