package ledger

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Cohorts: budgets that lend each other what they leave idle (Kueue's
// cohorts), per resource. For a member b of a cohort, of a resource it
// limits:
//
//	T_b = its total (what it is guaranteed: Kueue's nominal quota)
//	L_b = its lending limit (absent: T_b; clamped to T_b)
//	G_b = T_b − L_b, guaranteed: never held by another member's slices
//	B_b = its borrowing limit (absent: unbounded)
//	U_b = what its slices count (held, with the admissions in flight)
//
//	lendable          = Σ L_c over the members that limit the resource
//	lendable in use   = Σ max(0, U_c − G_c)
//	available to b    = max(0, G_b − U_b) + (lendable − lendable in use),
//	                    capped by T_b + B_b − U_b
//
// A request of b fits when its increase is within what is available to b
// (less what b's own line is promised, as outside a cohort), which is
// Kueue's rule: U_b + r ≤ T_b + B_b, and the part of U_b + r above G_b,
// with the others' lendable use, stays within the lendable. Since
// Σ L_c + Σ G_c = Σ T_c, the members' slices never count more than the
// cohort's Σ T_c by an admission: the books count assumptions (the
// admissions in flight, a lost answer until it is settled) and a new
// leader's hold as the single budget does, and every member decides under
// the cohort's one lock, so no two members admit from one idle unit.
//
// What another member's waiters are promised counts as theirs (as used)
// when b is measured, so capacity freed for a waiter in one member, or
// reclaimed for it, is not taken by another member's slices. A member
// whose total or lending limit shrinks below what is borrowed from it
// revokes nothing by that alone: what is available goes negative, nothing
// new is admitted in the cohort beyond it until enough is released, and
// the figures clamp at zero (Kueue's shrink clamp). A resource a member
// does not limit it neither lends nor borrows.
//
// Status: borrowed_b = max(0, U_b − T_b). lent_b attributes the cohort's
// whole borrowed amount, Σ borrowed_c, to the members that leave part of
// their lendable idle, in proportion to that idle lendable part,
// min(L_b, max(0, T_b − U_b)), rounded down to the milli-unit, the last
// lender (by name) taking the rounding remainder; so Σ lent = Σ borrowed
// whenever anything lendable is idle. (Kueue shows no lent figure.)

// ReclaimPolicy says which borrowed capacity a cohort member takes back
// for its own waiting slices while it holds less than its total.
type ReclaimPolicy string

// The policies of reclaim within a cohort.
const (
	// ReclaimNever: a member waits until borrowers release what it lent.
	ReclaimNever ReclaimPolicy = "Never"
	// ReclaimLowerPriority: from borrowers' slices of strictly lower
	// priority than the waiting slice.
	ReclaimLowerPriority ReclaimPolicy = "LowerPriority"
	// ReclaimAny: from any borrower's slices.
	ReclaimAny ReclaimPolicy = "Any"
)

// Cohort is a set of ledgers that lend each other what they leave idle.
// Its members share its lock. The zero value is not usable: NewCohort.
type Cohort struct {
	name string
	box  *lockBox
	// members, by name then creation: under box.
	members []*Ledger
}

// NewCohort returns an empty cohort. It refuses an empty name.
func NewCohort(name string) (*Cohort, error) {
	if name == "" {
		return nil, errors.New("cohort: empty name")
	}
	return &Cohort{name: name, box: newLockBox()}, nil
}

// Name returns the cohort's name.
func (c *Cohort) Name() string { return c.name }

// Members returns the names of the cohort's members, sorted.
func (c *Cohort) Members() []string {
	c.box.mu.Lock()
	defer c.box.mu.Unlock()
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.name
	}
	return out
}

// lock locks the ledger's lock, its own or its cohort's; it starts again
// when the ledger moved to another lock while it waited.
func (l *Ledger) lock() {
	for {
		b := l.lk.Load()
		b.mu.Lock()
		if l.lk.Load() == b {
			return
		}
		b.mu.Unlock()
	}
}

// unlock unlocks the ledger's lock, which the caller holds: it cannot
// have moved meanwhile (moving needs it).
func (l *Ledger) unlock() { l.lk.Load().mu.Unlock() }

// JoinCohort makes the ledger a member of c (nil: of none), leaving the
// cohort it was in. The members of both are woken: what is available to
// each changed. A member whose slices borrow (count more than its total),
// or whose lent capacity the others' slices hold, stays until neither is
// true, lending nothing and borrowing nothing more meanwhile, so that
// neither the cohort it leaves nor it alone admits what is still held; it
// then moves at the first wake.
func (l *Ledger) JoinCohort(c *Cohort) {
	to := l.own
	if c != nil {
		to = c.box
	}
	for {
		from := l.lk.Load()
		boxes := []*lockBox{from}
		if to != from {
			boxes = append(boxes, to)
		}
		sort.Slice(boxes, func(i, j int) bool { return boxes[i].id < boxes[j].id })
		for _, b := range boxes {
			b.mu.Lock()
		}
		if l.lk.Load() != from {
			unlockAll(boxes)
			continue
		}
		old := l.cohort
		if old == c {
			if l.leaving != nil { // it stays after all
				l.leaving = nil
				wake := l.wakeLocked()
				unlockAll(boxes)
				wake()
				return
			}
			unlockAll(boxes)
			return
		}
		if old != nil && !l.mayLeaveLocked() {
			// Its slices hold what the others lent: it leaves once they
			// no longer do, lending nothing and borrowing nothing more
			// meanwhile (completeLeavesLocked), so that the cohort it
			// leaves never admits what it still holds.
			l.leaving = &leave{to: c}
			wake := l.wakeLocked()
			unlockAll(boxes)
			wake()
			return
		}
		l.leaving = nil
		var wakes []func()
		if old != nil {
			// What was taken back within the old cohort, for its waiters
			// or from its slices, is not the new domain's to keep (issue
			// 50, scenario 5): the caps are lifted before it leaves.
			var lifted []types.NamespacedName
			for h := range l.line.by {
				lifted = append(lifted, l.liftCohortLocked(h, true)...)
			}
			for h := range l.victims {
				if !l.line.has(h) {
					lifted = append(lifted, l.liftOwnLocked(h, true)...)
				}
			}
			wakes = append(wakes, l.wakeKeys(lifted))
		}
		if old != nil {
			old.members = slices.DeleteFunc(old.members, func(m *Ledger) bool { return m == l })
			for _, m := range old.members {
				wakes = append(wakes, m.wakeLineLocked())
			}
		}
		l.cohort = c
		if c != nil {
			c.members = append(c.members, l)
			sort.SliceStable(c.members, func(i, j int) bool { return c.members[i].name < c.members[j].name })
		}
		l.lk.Store(to)
		wakes = append(wakes, l.wakeLocked(), l.decidedWakesLocked())
		if old != nil && len(old.members) > 0 {
			wakes = append(wakes, old.members[0].decidedWakesLocked())
		}
		unlockAll(boxes)
		for _, w := range wakes {
			w()
		}
		return
	}
}

// leave is a cohort member's pending move to another cohort (to; nil for
// none), made once its slices borrow nothing (see JoinCohort).
type leave struct{ to *Cohort }

// borrowsLocked reports whether the ledger's slices count more than its
// total of some resource.
func (l *Ledger) borrowsLocked() bool {
	for _, n := range l.books.names {
		if q := l.books.sum[n]; q.Cmp(l.books.total[n]) > 0 {
			return true
		}
	}
	return false
}

// mayLeaveLocked reports whether the ledger may leave its cohort now: its
// slices borrow nothing, and the others' hold nothing of what it lent (the
// rest of the cohort holds, above what each is guaranteed, no more than
// the rest may lend). Either way, leaving would let the cohort, or the
// ledger on its own, admit what is still held.
func (l *Ledger) mayLeaveLocked() bool {
	if l.borrowsLocked() {
		return false
	}
	for _, n := range l.books.names {
		var pool resource.Quantity
		for _, m := range l.others() {
			if m.limitsResource(n) {
				pool.Add(m.lendableLocked(n))
				pool.Sub(m.lendInUseLocked(n, m.books.sum[n]))
			}
		}
		if pool.Sign() < 0 {
			return false
		}
	}
	return true
}

// completeLeavesLocked returns, for the members of c leaving it that no
// longer borrow, the moves to make once the lock is released: each joins
// where it goes then (JoinCohort checks again). The caller holds c's lock.
func (c *Cohort) completeLeavesLocked() []func() {
	var moves []func()
	for _, m := range c.members {
		if m.leaving == nil || !m.mayLeaveLocked() {
			continue
		}
		m, to := m, m.leaving.to
		moves = append(moves, func() { m.JoinCohort(to) })
	}
	return moves
}

// Cohort returns the name of the ledger's cohort, "" for none.
func (l *Ledger) Cohort() string {
	l.lock()
	defer l.unlock()
	if l.cohort == nil {
		return ""
	}
	return l.cohort.name
}

// CheckCohortTerms refuses negative limits, limits of resources total does
// not name, a lending limit above the total, and an unknown policy, as New
// does. A budget that follows a SliceBudget checks its spec with it before
// applying anything.
func CheckCohortTerms(total, borrowing, lending corev1.ResourceList, policy ReclaimPolicy) error {
	return checkCohortTerms(total, Options{BorrowingLimit: borrowing, LendingLimit: lending, ReclaimWithinCohort: policy}, true)
}

// checkCohortTerms refuses negative limits, limits of resources total does
// not name, a lending limit above the total (with aboveTotal), and an
// unknown policy.
func checkCohortTerms(total corev1.ResourceList, o Options, aboveTotal bool) error {
	for _, x := range []struct {
		what string
		rl   corev1.ResourceList
	}{{"borrowing limit", o.BorrowingLimit}, {"lending limit", o.LendingLimit}} {
		if err := checkQuantities(x.what, x.rl); err != nil {
			return err
		}
		var extra []string
		for n := range x.rl {
			if _, ok := total[n]; !ok {
				extra = append(extra, string(n))
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return fmt.Errorf("%s names %s, which the total does not limit", x.what, strings.Join(extra, ", "))
		}
	}
	var over []string
	for n, q := range o.LendingLimit {
		if !aboveTotal {
			break
		}
		if t := total[n]; q.Cmp(t) > 0 {
			over = append(over, fmt.Sprintf("%s: %s above the total %s", n, q.String(), t.String()))
		}
	}
	if len(over) > 0 {
		sort.Strings(over)
		return fmt.Errorf("lending limit above the total: %s", strings.Join(over, "; "))
	}
	switch o.ReclaimWithinCohort {
	case "", ReclaimNever, ReclaimLowerPriority, ReclaimAny:
	default:
		return fmt.Errorf("reclaim within cohort %q: want %s, %s or %s", o.ReclaimWithinCohort, ReclaimNever, ReclaimLowerPriority, ReclaimAny)
	}
	return nil
}

// SetCohortTerms changes the ledger's borrowing and lending limits and its
// reclaim policy (nil limits: absent), as New checks them, except that a
// lending limit above the total is clamped to it (a node pool's total
// moves). A smaller lending limit revokes nothing by itself (see the
// cohort rules above); the cohort's members are woken, since what is
// available to each changed.
func (l *Ledger) SetCohortTerms(borrowing, lending corev1.ResourceList, policy ReclaimPolicy) error {
	l.lock()
	o := Options{BorrowingLimit: borrowing, LendingLimit: lending, ReclaimWithinCohort: policy}
	if err := checkCohortTerms(l.books.total, o, false); err != nil {
		l.unlock()
		return fmt.Errorf("budget %q: %w", l.name, err)
	}
	l.opts.BorrowingLimit, l.opts.LendingLimit, l.opts.ReclaimWithinCohort = borrowing.DeepCopy(), lending.DeepCopy(), policy
	l.changedLocked()
	wake := l.wakeLocked()
	decided := l.decidedWakesLocked()
	l.unlock()
	wake()
	decided()
	return nil
}

// CohortTerms returns copies of the ledger's borrowing and lending limits
// (nil when absent) and its reclaim policy.
func (l *Ledger) CohortTerms() (borrowing, lending corev1.ResourceList, policy ReclaimPolicy) {
	l.lock()
	defer l.unlock()
	return l.opts.BorrowingLimit.DeepCopy(), l.opts.LendingLimit.DeepCopy(), l.opts.ReclaimWithinCohort
}

// limitsResource reports whether the ledger limits n.
func (l *Ledger) limitsResource(n corev1.ResourceName) bool {
	_, ok := l.books.total[n]
	return ok
}

// lendableLocked is L of n: the lending limit, clamped to the total;
// nothing for a member leaving its cohort.
func (l *Ledger) lendableLocked(n corev1.ResourceName) resource.Quantity {
	if l.leaving != nil {
		return resource.Quantity{}
	}
	return l.lendingLimitLocked(n)
}

// lendingLimitLocked is the lending limit of n, clamped to the total,
// leaving or not: what of its total the others may hold.
func (l *Ledger) lendingLimitLocked(n corev1.ResourceName) resource.Quantity {
	t := l.books.total[n]
	if q, ok := l.opts.LendingLimit[n]; ok && q.Cmp(t) < 0 {
		return q
	}
	return t
}

// guaranteedLocked is G of n: the total less what is lendable.
func (l *Ledger) guaranteedLocked(n corev1.ResourceName) resource.Quantity {
	g := l.books.total[n].DeepCopy()
	g.Sub(l.lendableLocked(n))
	return g
}

// lendInUseLocked is max(0, u − G) of n.
func (l *Ledger) lendInUseLocked(n corev1.ResourceName, u resource.Quantity) resource.Quantity {
	u = u.DeepCopy()
	u.Sub(l.guaranteedLocked(n))
	if u.Sign() < 0 {
		return resource.Quantity{}
	}
	return u
}

// freeLocked is what a request of the ledger may take now, per limited
// resource, before its own line's promises: total − used outside a
// cohort; what is available to it in the cohort otherwise (see above). It
// may be negative. The caller holds the lock.
func (l *Ledger) freeLocked() corev1.ResourceList {
	free := l.books.free()
	c := l.cohort
	if c == nil {
		return free
	}
	promised := make(map[*Ledger]corev1.ResourceList, len(c.members))
	for _, m := range c.members {
		if m != l && m.line.nPromise > 0 {
			promised[m] = m.promisedBeyondReclaimLocked()
		}
	}
	for _, n := range l.books.names {
		pool := resource.Quantity{}
		for _, m := range c.members {
			if !m.limitsResource(n) {
				continue
			}
			pool.Add(m.lendableLocked(n))
			u := m.books.sum[n].DeepCopy()
			// What another member's line is promised is its own.
			u.Add(promised[m][n])
			pool.Sub(m.lendInUseLocked(n, u))
		}
		avail := l.guaranteedLocked(n)
		avail.Sub(l.books.sum[n])
		if avail.Sign() < 0 {
			avail = resource.Quantity{}
		}
		avail.Add(pool)
		if b, ok := l.opts.BorrowingLimit[n]; ok || l.leaving != nil {
			if l.leaving != nil {
				b = resource.Quantity{} // leaving: it borrows nothing more
			}
			ceil := l.books.total[n].DeepCopy()
			ceil.Add(b)
			ceil.Sub(l.books.sum[n])
			if ceil.Cmp(avail) < 0 {
				avail = ceil
			}
		}
		free[n] = avail
	}
	return free
}

// ceilingLocked is the most the ledger's slices may ever count of n: its
// total outside a cohort; in one, its total and its borrowing limit, or
// what the others may lend when it has none.
func (l *Ledger) ceilingLocked(n corev1.ResourceName) resource.Quantity {
	t := l.books.total[n].DeepCopy()
	if l.cohort == nil || l.leaving != nil {
		return t
	}
	if b, ok := l.opts.BorrowingLimit[n]; ok {
		t.Add(b)
		return t
	}
	for _, m := range l.cohort.members {
		if m != l && m.limitsResource(n) {
			t.Add(m.lendableLocked(n))
		}
	}
	return t
}

// borrowedLocked is max(0, U − T) per limited resource.
func (l *Ledger) borrowedLocked() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range l.books.names {
		b := l.books.sum[n].DeepCopy()
		b.Sub(l.books.total[n])
		if b.Sign() < 0 {
			b = resource.Quantity{}
		}
		out[n] = b
	}
	return out
}

// idleLendableLocked is min(L, max(0, T − U)) of n.
func (l *Ledger) idleLendableLocked(n corev1.ResourceName) resource.Quantity {
	idle := l.books.total[n].DeepCopy()
	idle.Sub(l.books.sum[n])
	if idle.Sign() < 0 {
		return resource.Quantity{}
	}
	if lend := l.lendingLimitLocked(n); lend.Cmp(idle) < 0 {
		return lend
	}
	return idle
}

// lentLocked is what the other members' slices hold of the ledger's total,
// per limited resource, by the attribution rule above; zero outside a
// cohort.
func (l *Ledger) lentLocked() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range l.books.names {
		out[n] = resource.Quantity{}
	}
	if l.cohort == nil {
		return out
	}
	for _, n := range l.books.names {
		borrowed := new(big.Int)
		idleSum := new(big.Int)
		var last *Ledger
		for _, m := range l.cohort.members {
			if !m.limitsResource(n) {
				continue
			}
			b := m.books.sum[n].DeepCopy()
			b.Sub(m.books.total[n])
			if b.Sign() > 0 {
				borrowed.Add(borrowed, milli(b))
			}
			if idle := m.idleLendableLocked(n); idle.Sign() > 0 {
				idleSum.Add(idleSum, milli(idle))
				last = m
			}
		}
		if borrowed.Sign() == 0 || idleSum.Sign() == 0 {
			continue
		}
		if borrowed.Cmp(idleSum) > 0 {
			borrowed.Set(idleSum) // after a shrink: no one lends more than it has idle
		}
		share := func(m *Ledger) *big.Int {
			x := new(big.Int).Mul(borrowed, milli(m.idleLendableLocked(n)))
			return x.Quo(x, idleSum)
		}
		mine := share(l)
		if l == last {
			rest := new(big.Int).Set(borrowed)
			for _, m := range l.cohort.members {
				if m != l && m.limitsResource(n) {
					rest.Sub(rest, share(m))
				}
			}
			mine = rest
		}
		out[n] = *resource.NewMilliQuantity(mine.Int64(), resource.DecimalSI)
	}
	return out
}

// milli is q in milli-units, exactly.
func milli(q resource.Quantity) *big.Int {
	d := q.AsDec()
	// d = unscaled × 10^-scale; in milli-units: unscaled × 10^(3-scale).
	x := new(big.Int).Set(d.UnscaledBig())
	s := 3 - int64(d.Scale())
	if s >= 0 {
		return x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(s), nil))
	}
	return x.Quo(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(-s), nil))
}

// wakeLocked promises what is free to the waiting slices that fit, in the
// ledger's line and, for a cohort member, in every member's (what one
// member frees may be available to the others): the lines whose highest
// waiting priority is highest first (then by budget name), so that what
// frees goes to the highest priority in the cohort. It returns a function
// that enqueues the newly promised ones, to call without the lock.
func (l *Ledger) wakeLocked() func() {
	if l.cohort == nil {
		return l.wakeLineLocked()
	}
	type line struct {
		m   *Ledger
		top int32
	}
	lines := make([]line, 0, len(l.cohort.members))
	for _, m := range l.cohort.members {
		if ps := m.line.priorities(); len(ps) > 0 {
			lines = append(lines, line{m: m, top: ps[0]})
		}
	}
	wakes := l.cohort.completeLeavesLocked()
	if len(lines) == 0 {
		return func() {
			for _, w := range wakes {
				w()
			}
		}
	}
	if f, ws := l.frameLocked(); f.paused == "" && len(ws) <= decideWakeLimit {
		// One order over the whole cohort (issue 50, scenario 8): what
		// is promised is what decide admits on the domain as it stands,
		// recomputed each time, not member by member.
		wakes = append(wakes, l.promiseDecidedLocked(decide(f, ws)))
		return func() {
			for _, w := range wakes {
				w()
			}
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].top > lines[j].top })
	for _, x := range lines {
		wakes = append(wakes, x.m.wakeLineLocked())
	}
	return func() {
		for _, w := range wakes {
			w()
		}
	}
}

// decideWakeLimit bounds the waiters of a cohort for which a wake orders
// them all by decide, under the cohort's lock: decide costs O(W²) (about
// 20 ms for 200 waiters), and a wake follows every observation that frees
// capacity. Beyond it the member-by-member order is kept, until the loop
// decides once per batch of changes instead of once per change.
const decideWakeLimit = 128

// promiseDecidedLocked makes the promises of l's cohort those of p: a
// waiter p admits is promised what it asks (and woken, unless it was
// already), one it does not loses its promise; a waiter reclaimed for
// keeps the promise its reclaim made, and is woken once p admits it. It
// returns the wakes, to call without the lock.
func (l *Ledger) promiseDecidedLocked(p plan) func() {
	type target struct {
		wake func(types.NamespacedName)
		key  types.NamespacedName
	}
	var ts []target
	woken := map[Holder]bool{}
	for _, m := range l.cohort.members {
		if m.line.len() == 0 {
			continue
		}
		m.changedLocked() // what is promised changes
		for h, w := range m.line.by {
			// Undecided slices of higher priority (a new leader's) hold
			// it back, as in wakeLineLocked.
			admit := p.decisions[h].kind == decideAdmit && m.closed == "" && m.heldBackLocked(w.priority) == 0
			wake := false
			switch {
			case w.reclaiming:
				wake = admit
			case admit && !w.promised:
				m.line.promise(w)
				wake = true
			case !admit && w.promised:
				m.line.unpromise(w)
			}
			if wake && !woken[h] {
				woken[h] = true
				if c, ok := m.books.classes[h.Class]; ok && c.Wake != nil {
					ts = append(ts, target{c.Wake, h.Key})
				}
			}
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].key.String() < ts[j].key.String() })
	return func() {
		for _, t := range ts {
			t.wake(t.key)
		}
	}
}

// Cohorts are a manager's cohorts by name, where every budget the manager
// serves joins the cohort it names (SetCohortName): one per manager,
// whatever registered the classes (internal/cohorts keeps it, and drops it
// when the manager stops). A cohort is made on first use and kept while the
// manager runs. The zero value is not usable: NewCohorts.
type Cohorts struct {
	mu sync.Mutex
	by map[string]*Cohort
}

// NewCohorts returns an empty set of cohorts.
func NewCohorts() *Cohorts { return &Cohorts{by: map[string]*Cohort{}} }

// get returns the cohort named name, made on first use.
func (cs *Cohorts) get(name string) *Cohort {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.by[name]
	if c == nil {
		c = &Cohort{name: name, box: newLockBox()}
		cs.by[name] = c
	}
	return c
}

// named is a ledger's cohort by name: the name its SliceBudget's spec
// gives, and the cohorts of the manager it is bound to. Under its own
// lock, which is taken before the ledger's (JoinCohort takes those).
type named struct {
	mu      sync.Mutex
	on      bool // SetCohortName was called: the name, not WithCohort, decides
	name    string
	cohorts *Cohorts
}

// SetCohortName makes the ledger a member of the cohort name of the
// manager it is bound to (SetCohorts), now or once it is bound; "" leaves
// any cohort. It is how a budget that follows a SliceBudget applies
// spec.cohort.
func (l *Ledger) SetCohortName(name string) {
	n := &l.named
	n.mu.Lock()
	defer n.mu.Unlock()
	n.on, n.name = true, name
	l.joinNamedLocked()
}

// SetCohorts gives the ledger the cohorts of the manager it is bound to
// (nil once it is unbound: it leaves its cohort). A ledger whose cohort is
// not set by name (SetCohortName) keeps the one it was given (WithCohort).
func (l *Ledger) SetCohorts(cs *Cohorts) {
	n := &l.named
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cohorts = cs
	if n.on {
		l.joinNamedLocked()
	}
}

// joinNamedLocked joins the cohort l.named says; the caller holds its
// lock.
func (l *Ledger) joinNamedLocked() {
	n := &l.named
	var c *Cohort
	if n.name != "" && n.cohorts != nil {
		c = n.cohorts.get(n.name)
	}
	l.JoinCohort(c)
}

// heldBackLocked is how many slices of priority above p are undecided
// since the books were counted (a new leader's hold, see undecided.go):
// in the ledger, and for a cohort member in every member, since what a
// higher priority of another member was promised or was taking back is
// learnt only as it is decided. So a borrower shrunk for a lender does not
// grow back into what its pods free before the lender is decided again.
func (l *Ledger) heldBackLocked(p int32) int {
	n := l.books.heldBack(p)
	for _, m := range l.others() {
		n += m.books.heldBack(p)
	}
	return n
}

// promisedBeyondReclaimLocked is what the ledger's line is promised, less
// what its victims still hold of what is being reclaimed for its waiters:
// that part is counted already, in the victims' books, until it frees.
// Without it, a lender's waiter would count twice (its promise and its
// borrowers' holdings) and keep a third member out of its own guarantee.
func (l *Ledger) promisedBeyondReclaimLocked() corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range l.line.promised {
		out[n] = q.DeepCopy()
	}
	ms := append([]*Ledger{l}, l.others()...)
	for _, x := range ms {
		for h := range x.victims {
			w := l.line.by[h]
			if w == nil || !w.promised || !w.reclaiming {
				continue
			}
			for n, q := range x.pendingLocked(h) {
				if inc := w.increase[n]; q.Cmp(inc) > 0 {
					q = inc
				}
				sub(out, n, q)
			}
		}
	}
	for n, q := range out {
		if q.Sign() < 0 {
			out[n] = resource.Quantity{}
		}
	}
	return out
}
