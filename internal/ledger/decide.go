package ledger

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Deciding on a snapshot (issue 50): one pure function of a domain's
// snapshot (a cohort, or a lone budget as a cohort of one) answers, for
// every waiting slice, admit or wait, and for every slice that must yield,
// what it keeps and for whom. It remembers nothing: caps and promises are
// its outputs, recomputed each cycle from the books and the waiting set,
// so no exit path has anything to unwind. The loop that takes the
// snapshot under the domain's lock and publishes the plan replaces the
// remembered caps, promises and give-backs (line.go, wake.go, reclaim.go,
// reclaimcohort.go); until it does, decide is reached only by its tests.
//
// The arithmetic is the cohort's (cohort.go), per resource a member
// limits, in exact milli-units:
//
//	available to m = max(0, G_m − U_m) + (Σ L − Σ max(0, U_c − G_c)),
//	                 capped by T_m + B_m − U_m when m has a borrowing limit
//
// where a lone budget lends all of its total to itself (G = 0), so that
// available is T − U. The order is Kueue's: among all members' waiting
// slices, those that need no borrowing first, then the higher priority,
// then the consumer holding the smaller dominant share of the domain,
// then the oldest; each is judged on the snapshot as updated by the
// admissions and reclaims decided before it in the same cycle.

// frame is the snapshot of one domain that decide reads.
type frame struct {
	// paused, when set, says why the domain decides nothing (a member's
	// books are not counted, its settings not read): every waiter waits
	// with ReasonNotCounted and nothing is capped.
	paused  string
	members []frameMember
}

// frameMember is one budget of the domain.
type frameMember struct {
	name string
	// total names exactly the resources the member limits. borrowing
	// and lending are its cohort terms: a resource borrowing does not
	// name is borrowed without a limit beyond what the others lend, one
	// lending does not name is lent in full.
	total, borrowing, lending corev1.ResourceList
	// ownReclaim: its waiters may take from its own slices of lower
	// priority (Options.Preemption); cohortReclaim, from what other
	// members borrow (Options.ReclaimWithinCohort).
	ownReclaim    bool
	cohortReclaim ReclaimPolicy
	// limit is what one consumer may hold, limits a consumer's own.
	limit  corev1.ResourceList
	limits map[string]corev1.ResourceList
	// closed, when set, says why the member admits nothing new.
	closed string
	// slices are what its slices count now (held, and assumed writes).
	slices []frameSlice
}

// frameSlice is what one slice counts in one member.
type frameSlice struct {
	key      types.NamespacedName
	consumer string
	priority int32
	created  time.Time
	counted  corev1.ResourceList
	// inUse is what its consumer's running pods are charged: a cut below
	// it frees capacity only as the pods end.
	inUse corev1.ResourceList
}

// frameWaiter is a slice asking for more than it counts, in every member
// it names (all or none).
type frameWaiter struct {
	Holder
	members  []string
	offer    corev1.ResourceList
	priority int32
	consumer string
	created  time.Time
}

// decisionKind is what a waiter is told.
type decisionKind int

const (
	// decideAdmit: the offer fits; the caller assumes and writes it.
	decideAdmit decisionKind = iota
	// decideWait: it does not fit (block says why, in kind).
	decideWait
)

// decision is a waiter's outcome in a cycle.
type decision struct {
	kind  decisionKind
	offer corev1.ResourceList
	// block is why it waits: the member, the reason, the short
	// resources; reclaiming when cuts are planned for it and it waits
	// for its victims to yield.
	block      block
	reclaiming bool
}

// block is what keeps a waiter out, in kind only (no figure that moves
// with other slices).
type block struct {
	member, reason string
	resources      []string
}

// The reasons a cap is made for.
const (
	capForWaiter = "waiter"
	capForTotal  = "total"
)

// capDecision is what a slice keeps this cycle, and why.
type capDecision struct {
	member string
	keep   corev1.ResourceList
	// parts are the cuts that make it, in the order they were planned:
	// one per waiter it yields to, and one for its member's total.
	parts []capPart
	// inUse is what the slice's running pods use above keep: what the
	// cap frees only as they end (a partial reclaim waits for them).
	inUse corev1.ResourceList
}

// capPart is one cut of a cap: for a waiter (waiter names it, cohort
// tells whether it was taken back within the cohort), or, with reason
// capForTotal, for its member holding more than its total and borrowing
// limit while it reclaims from its own slices.
type capPart struct {
	reason string
	waiter Holder
	cohort bool
	took   corev1.ResourceList
}

// addCap records that ds in m yields took for part (its took set here).
func (p *plan) addCap(m *dmember, ds *dslice, part capPart, took vec) {
	part.took = took.list(m.names)
	c := p.caps[ds.key]
	c.member = m.name
	c.keep = ds.count.list(m.names)
	c.parts = append(c.parts, part)
	c.inUse = ds.stillInUse(m.names)
	p.caps[ds.key] = c
}

// plan is decide's output.
type plan struct {
	decisions map[Holder]decision
	caps      map[types.NamespacedName]capDecision
	// over is, per member, what its slices count beyond all it may hold
	// (total and borrowing limit), caps or not (a cap frees nothing until
	// its slice is seen smaller): a condition, never silence.
	over map[string]corev1.ResourceList
	// cohortOver is what the members count above their guarantees beyond
	// all they may lend, per resource: the domain holds more than its
	// totals (each member concerned says so).
	cohortOver corev1.ResourceList
}

// vec is a resource vector in milli-units.
type vec map[corev1.ResourceName]int64

func vecOf(rl corev1.ResourceList) vec {
	v := vec{}
	for n, q := range rl {
		v[n] = q.MilliValue()
	}
	return v
}

func (v vec) list(names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if x, ok := v[n]; ok {
			out[n] = *resource.NewMilliQuantity(x, resource.DecimalSI)
		}
	}
	return out
}

// dmember is a member's state during a cycle.
type dmember struct {
	name                string
	names               []corev1.ResourceName
	total, guaranteed   vec
	lend, ceilingExtra  vec // ceilingExtra: the borrowing limit, where set
	used                vec
	ver                 int // counts the changes of used
	ownReclaim          bool
	cohortReclaim       ReclaimPolicy
	limit               vec
	limits              map[string]vec
	closed              string
	byConsumer          map[string]vec
	slices              map[types.NamespacedName]*dslice
	order               []types.NamespacedName
	limitsName          map[corev1.ResourceName]bool
	hasBorrowingLimitOn map[corev1.ResourceName]bool
}

type dslice struct {
	key      types.NamespacedName
	consumer string
	priority int32
	created  time.Time
	count    vec // what it counts now in the simulation (cuts lower it)
	inUse    vec
	// grew: it was admitted, or set aside for, in this cycle; it is not
	// cut in the same one.
	grew bool
}

// dstate is the simulated domain.
type dstate struct {
	members []*dmember
	by      map[string]*dmember
	// share's denominators: the domain's totals.
	totals vec
	// held is what each consumer counts across the domain; heldVer
	// counts its changes.
	held    map[string]vec
	heldVer map[string]int
}

func newState(f frame) *dstate {
	s := &dstate{by: map[string]*dmember{}, totals: vec{}, held: map[string]vec{}, heldVer: map[string]int{}}
	for i := range f.members {
		fm := &f.members[i]
		m := &dmember{name: fm.name, total: vecOf(fm.total), guaranteed: vec{}, lend: vec{}, ceilingExtra: vec{}, used: vec{},
			ownReclaim: fm.ownReclaim, cohortReclaim: fm.cohortReclaim, limit: vecOf(fm.limit), limits: map[string]vec{},
			closed: fm.closed, byConsumer: map[string]vec{}, slices: map[types.NamespacedName]*dslice{},
			limitsName: map[corev1.ResourceName]bool{}, hasBorrowingLimitOn: map[corev1.ResourceName]bool{}}
		if fm.limit == nil {
			m.limit = nil
		}
		for c, l := range fm.limits {
			m.limits[c] = vecOf(l)
		}
		for n, t := range m.total {
			m.names = append(m.names, n)
			m.limitsName[n] = true
			l := t
			if q, ok := fm.lending[n]; ok && q.MilliValue() < t {
				l = q.MilliValue()
			}
			m.lend[n] = l
			m.guaranteed[n] = t - l
			if q, ok := fm.borrowing[n]; ok {
				m.ceilingExtra[n] = q.MilliValue()
				m.hasBorrowingLimitOn[n] = true
			}
			s.totals[n] += t
		}
		sort.Slice(m.names, func(i, j int) bool { return m.names[i] < m.names[j] })
		for _, fs := range fm.slices {
			ds := &dslice{key: fs.key, consumer: fs.consumer, priority: fs.priority, created: fs.created, count: vec{}, inUse: vec{}}
			for n, q := range fs.counted {
				if m.limitsName[n] {
					ds.count[n] = q.MilliValue()
				}
			}
			for n, q := range fs.inUse {
				if m.limitsName[n] {
					ds.inUse[n] = q.MilliValue()
				}
			}
			if prev, ok := m.slices[fs.key]; ok { // one slice listed twice: it counts once, the larger
				for n, x := range ds.count {
					if x > prev.count[n] {
						m.addUse(prev.consumer, n, x-prev.count[n])
						prev.count[n] = x
					}
				}
				continue
			}
			m.slices[fs.key] = ds
			m.order = append(m.order, fs.key)
			for n, x := range ds.count {
				m.addUse(ds.consumer, n, x)
			}
		}
		s.members = append(s.members, m)
		s.by[m.name] = m
	}
	for _, m := range s.members {
		for c, v := range m.byConsumer {
			h := s.held[c]
			if h == nil {
				h = vec{}
				s.held[c] = h
			}
			for n, x := range v {
				h[n] += x
			}
		}
	}
	return s
}

func (m *dmember) addUse(consumer string, n corev1.ResourceName, x int64) {
	m.ver++
	m.used[n] += x
	bc := m.byConsumer[consumer]
	if bc == nil {
		bc = vec{}
		m.byConsumer[consumer] = bc
	}
	bc[n] += x
}

// available is what m may take of n now.
func (s *dstate) available(m *dmember, n corev1.ResourceName) int64 {
	var pool int64
	for _, c := range s.members {
		if !c.limitsName[n] {
			continue
		}
		pool += c.lend[n]
		if over := c.used[n] - c.guaranteed[n]; over > 0 {
			pool -= over
		}
	}
	avail := m.guaranteed[n] - m.used[n]
	if avail < 0 {
		avail = 0
	}
	avail += pool
	if m.hasBorrowingLimitOn[n] {
		if ceil := m.total[n] + m.ceilingExtra[n] - m.used[n]; ceil < avail {
			avail = ceil
		}
	}
	return avail
}

// ceiling is the most m's slices may count of n: its total and
// borrowing limit, or what the others may lend when it has none.
func (s *dstate) ceiling(m *dmember, n corev1.ResourceName) int64 {
	if m.hasBorrowingLimitOn[n] {
		return m.total[n] + m.ceilingExtra[n]
	}
	c := m.total[n]
	for _, o := range s.members {
		if o != m && o.limitsName[n] {
			c += o.lend[n]
		}
	}
	return c
}

// increase is what w asks in m beyond what its slice counts there.
func (m *dmember) increase(w *frameWaiter) vec {
	inc := vec{}
	var mine vec
	if ds := m.slices[w.Key]; ds != nil {
		mine = ds.count
	}
	for _, n := range m.names {
		q, ok := w.offer[n]
		if !ok {
			continue
		}
		if d := q.MilliValue() - mine[n]; d > 0 {
			inc[n] = d
		}
	}
	return inc
}

// limitOf is what consumer may hold in m; nil for no limit.
func (m *dmember) limitOf(consumer string) vec {
	if l, ok := m.limits[consumer]; ok {
		return l
	}
	return m.limit
}

// judge says why inc does not fit m for consumer ("" when it fits), and
// the short resources.
func (s *dstate) judge(m *dmember, consumer string, inc vec) (string, []string) {
	if len(inc) == 0 {
		return "", nil
	}
	if m.closed != "" {
		return ReasonUnavailable, sortedNames(inc)
	}
	var short []string
	for _, n := range m.names {
		if x := inc[n]; x > 0 && x > s.available(m, n) {
			short = append(short, string(n))
		}
	}
	if len(short) > 0 {
		return ReasonExhausted, short
	}
	if lim := m.limitOf(consumer); lim != nil {
		held := m.byConsumer[consumer]
		for _, n := range m.names {
			l, ok := lim[n]
			if x := inc[n]; ok && x > 0 && held[n]+x > l {
				short = append(short, string(n))
			}
		}
		if len(short) > 0 {
			return ReasonConsumerLimit, short
		}
	}
	return "", nil
}

func sortedNames(v vec) []string {
	out := make([]string, 0, len(v))
	for n := range v {
		out = append(out, string(n))
	}
	sort.Strings(out)
	return out
}

// grow counts inc for w's slice in m (an admission, or what a reclaim
// sets aside for it).
func (m *dmember) grow(w *frameWaiter, inc vec) {
	ds := m.slices[w.Key]
	if ds == nil {
		ds = &dslice{key: w.Key, consumer: w.consumer, priority: w.priority, created: w.created, count: vec{}, inUse: vec{}}
		m.slices[w.Key] = ds
		m.order = append(m.order, w.Key)
	}
	for n, x := range inc {
		ds.count[n] += x
		m.addUse(ds.consumer, n, x)
	}
}

// share is consumer's dominant share of the domain's totals.
func (s *dstate) share(consumer string) float64 {
	share := 0.0
	for n, h := range s.held[consumer] {
		if t := s.totals[n]; t > 0 {
			if x := float64(h) / float64(t); x > share {
				share = x
			}
		}
	}
	return share
}

func (s *dstate) addHeld(consumer string, inc vec) {
	s.heldVer[consumer]++
	h := s.held[consumer]
	if h == nil {
		h = vec{}
		s.held[consumer] = h
	}
	for n, x := range inc {
		h[n] += x
	}
}

// needsBorrowing reports whether w, admitted, would take a member above
// its total.
func (s *dstate) needsBorrowing(w *frameWaiter) bool {
	for _, name := range w.members {
		m := s.by[name]
		if m == nil {
			continue
		}
		for n, x := range m.increase(w) {
			if m.used[n]+x > m.total[n] {
				return true
			}
		}
	}
	return false
}

// decide is the domain's decision over f for waiters. It is pure: it reads
// f and waiters and changes neither.
func decide(f frame, waiters []frameWaiter) plan {
	p := plan{decisions: map[Holder]decision{}, caps: map[types.NamespacedName]capDecision{}, over: map[string]corev1.ResourceList{}}
	if f.paused != "" {
		for _, w := range waiters {
			p.decisions[w.Holder] = decision{kind: decideWait, block: block{reason: ReasonNotCounted}}
		}
		return p
	}
	s := newState(f)
	left := make([]pending, 0, len(waiters))
	for i := range waiters {
		left = append(left, pending{w: &waiters[i]})
	}
	var waiting []*frameWaiter
	for len(left) > 0 {
		i := s.next(left)
		w := left[i].w
		left = append(left[:i], left[i+1:]...)
		if c, ok := p.caps[w.Key]; ok {
			// Its slice yields in this cycle: its cap is its decision.
			p.decisions[w.Holder] = decision{kind: decideWait, block: block{member: c.member, reason: ReasonReclaimed}}
			continue
		}
		if !s.tryAdmit(w, &p) && !s.tryReclaim(w, &p) {
			waiting = append(waiting, w)
		}
	}
	// What a later decision freed (none should: cuts are set aside for
	// their waiter) is offered again to those that wait, in order, until
	// nothing more fits: no waiter is left that fits.
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(waiting); i++ {
			if _, capped := p.caps[waiting[i].Key]; !capped && s.tryAdmit(waiting[i], &p) {
				waiting = append(waiting[:i], waiting[i+1:]...)
				changed = true
				break
			}
		}
	}
	s.capOverCeiling(&p)
	// A waiter whose own slice yields for its member's total waits for
	// that: its cap is its decision.
	for _, w := range waiters {
		if c, ok := p.caps[w.Key]; ok && p.decisions[w.Holder].kind == decideWait && !p.decisions[w.Holder].reclaiming {
			p.decisions[w.Holder] = decision{kind: decideWait, block: block{member: c.member, reason: ReasonReclaimed}}
		}
	}
	p.cohortOver = s.overLent()
	for _, m := range s.members {
		over := vec{}
		for _, n := range m.names {
			if x := m.used[n] - s.ceiling(m, n); x > 0 {
				over[n] = x
			}
		}
		if len(over) > 0 {
			p.over[m.name] = over.list(m.names)
		}
	}
	return p
}

// overLent is, per resource, what the members count above their
// guarantees beyond what they lend together; nil when nothing is.
func (s *dstate) overLent() corev1.ResourceList {
	over := vec{}
	var names []corev1.ResourceName
	for n := range s.totals {
		var pool int64
		for _, c := range s.members {
			if !c.limitsName[n] {
				continue
			}
			pool += c.lend[n]
			if x := c.used[n] - c.guaranteed[n]; x > 0 {
				pool -= x
			}
		}
		if pool < 0 {
			over[n] = -pool
			names = append(names, n)
		}
	}
	if len(over) == 0 {
		return nil
	}
	return over.list(names)
}

// pending is a waiter not yet decided in a cycle, with its order key
// cached: whether it needs borrowing and its consumer's share change only
// when its members' or its consumer's counts do (versions).
type pending struct {
	w       *frameWaiter
	borrows bool
	share   float64
	mvers   []int
	cver    int
	known   bool
}

// refresh recomputes p's key if what it depends on changed.
func (s *dstate) refresh(p *pending) {
	if p.known && s.heldVer[p.w.consumer] == p.cver {
		same := true
		for i, name := range p.w.members {
			if m := s.by[name]; m != nil && m.ver != p.mvers[i] {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	p.borrows, p.share, p.cver, p.known = s.needsBorrowing(p.w), s.share(p.w.consumer), s.heldVer[p.w.consumer], true
	p.mvers = p.mvers[:0]
	for _, name := range p.w.members {
		v := -1
		if m := s.by[name]; m != nil {
			v = m.ver
		}
		p.mvers = append(p.mvers, v)
	}
}

// next is the index in left of the waiter to decide next: no borrowing
// first, then priority, then the smaller consumer share, then the oldest,
// then by name.
func (s *dstate) next(left []pending) int {
	best := 0
	for i := range left {
		s.refresh(&left[i])
	}
	for i := 1; i < len(left); i++ {
		a, b := &left[i], &left[best]
		w, o := a.w, b.w
		switch {
		case a.borrows != b.borrows:
			if a.borrows {
				continue
			}
		case w.priority != o.priority:
			if w.priority < o.priority {
				continue
			}
		case a.share != b.share:
			if a.share > b.share {
				continue
			}
		case !w.created.Equal(o.created):
			if w.created.After(o.created) {
				continue
			}
		case w.Key != o.Key:
			if w.Key.Namespace > o.Key.Namespace || (w.Key.Namespace == o.Key.Namespace && w.Key.Name > o.Key.Name) {
				continue
			}
		default:
			if w.Class >= o.Class {
				continue
			}
		}
		best = i
	}
	return best
}

// tryAdmit admits w in every member it names, judged one member after the
// other on the snapshot the earlier ones updated, or in none; it records
// w's decision either way (a wait it may overwrite with a reclaim).
func (s *dstate) tryAdmit(w *frameWaiter, p *plan) bool {
	type grown struct {
		m   *dmember
		inc vec
	}
	var done []grown
	undo := func() {
		for _, g := range done {
			neg := vec{}
			for n, x := range g.inc {
				neg[n] = -x
			}
			g.m.grow(w, neg)
			s.addHeld(w.consumer, neg)
		}
	}
	for _, name := range w.members {
		m := s.by[name]
		if m == nil {
			undo()
			p.decisions[w.Holder] = decision{kind: decideWait, block: block{member: name, reason: ReasonUnavailable}}
			return false
		}
		inc := m.increase(w)
		if reason, short := s.judge(m, w.consumer, inc); reason != "" {
			undo()
			p.decisions[w.Holder] = decision{kind: decideWait, block: block{member: name, reason: reason, resources: short}}
			return false
		}
		m.grow(w, inc)
		s.addHeld(w.consumer, inc)
		done = append(done, grown{m, inc})
	}
	for _, g := range done {
		g.m.slices[w.Key].grew = true
	}
	p.decisions[w.Holder] = decision{kind: decideAdmit, offer: w.offer.DeepCopy()}
	return true
}

// candidate is a slice a reclaim may cut for a waiter.
type candidate struct {
	m      *dmember
	ds     *dslice
	cohort bool
	share  float64
}

// tryReclaim plans, for w that does not fit, cuts over its members' own
// slices of lower priority (with ownReclaim) and what other members
// borrow (by each member's cohortReclaim) together, the lowest priority,
// largest share and newest first; it keeps them only if w fits once they
// are done, and then sets w's increase aside for it. Only an Exhausted
// wait is reclaimed for: a closed member or a consumer's limit is not
// lifted by cutting others.
func (s *dstate) tryReclaim(w *frameWaiter, p *plan) bool {
	d := p.decisions[w.Holder]
	if d.block.reason != ReasonExhausted || len(w.members) != 1 {
		return false
	}
	m := s.by[w.members[0]]
	inc := m.increase(w)
	// A consumer's limit is checked first: cuts of others do not lift it.
	if lim := m.limitOf(w.consumer); lim != nil {
		for n, x := range inc {
			if l, ok := lim[n]; ok && m.byConsumer[w.consumer][n]+x > l {
				return false
			}
		}
	}
	// Taking back within the cohort is for a member that would hold no
	// more than its total (Kueue's reclaimWithinCohort).
	withinTotal := true
	for n, x := range inc {
		if m.used[n]+x > m.total[n] {
			withinTotal = false
		}
	}
	var cands []candidate
	for _, o := range s.members {
		for _, key := range o.order {
			ds := o.slices[key]
			if key == w.Key || ds.grew || !positive(ds.count) {
				continue
			}
			switch o {
			case m:
				if !m.ownReclaim || ds.priority >= w.priority {
					continue
				}
				cands = append(cands, candidate{m: o, ds: ds, share: s.share(ds.consumer)})
			default:
				if !withinTotal || m.cohortReclaim == ReclaimNever || m.cohortReclaim == "" {
					continue
				}
				if m.cohortReclaim == ReclaimLowerPriority && ds.priority >= w.priority {
					continue
				}
				if !borrows(o) {
					continue
				}
				cands = append(cands, candidate{m: o, ds: ds, cohort: true, share: s.share(ds.consumer)})
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		switch {
		case a.ds.priority != b.ds.priority:
			return a.ds.priority < b.ds.priority
		case a.share != b.share:
			return a.share > b.share
		case !a.ds.created.Equal(b.ds.created):
			return a.ds.created.After(b.ds.created)
		}
		return a.ds.key.String() < b.ds.key.String()
	})
	type cutDone struct {
		c    candidate
		took vec
	}
	var cuts []cutDone
	fits := func() bool { r, _ := s.judge(m, w.consumer, inc); return r == "" }
	for _, c := range cands {
		if fits() {
			break
		}
		took := vec{}
		for n, x := range inc {
			lack := x - s.available(m, n)
			if lack <= 0 {
				continue
			}
			can := c.ds.count[n]
			if c.cohort {
				if b := c.m.used[n] - c.m.total[n]; b < can {
					can = b // only what it borrows
				}
			}
			if lack < can {
				can = lack
			}
			if can <= 0 {
				continue
			}
			took[n] = can
			c.ds.count[n] -= can
			c.m.addUse(c.ds.consumer, n, -can)
			s.addHeld(c.ds.consumer, vec{n: -can})
		}
		if len(took) > 0 {
			cuts = append(cuts, cutDone{c, took})
		}
	}
	if !fits() {
		for _, cd := range cuts {
			for n, x := range cd.took {
				cd.c.ds.count[n] += x
				cd.c.m.addUse(cd.c.ds.consumer, n, x)
				s.addHeld(cd.c.ds.consumer, vec{n: x})
			}
		}
		return false
	}
	for _, cd := range cuts {
		p.addCap(cd.c.m, cd.c.ds, capPart{reason: capForWaiter, waiter: w.Holder, cohort: cd.c.cohort}, cd.took)
	}
	m.grow(w, inc) // set aside: no later waiter takes what is cut for w
	m.slices[w.Key].grew = true
	s.addHeld(w.consumer, inc)
	d.reclaiming = true
	p.decisions[w.Holder] = d
	return true
}

// capOverCeiling cuts, in each member that reclaims from its own slices,
// what they still count beyond all it may hold (its total and borrowing
// limit) once the cycle's reclaims are planned: the lowest priority, then
// the newest first. Nothing it cuts is free in this cycle: the member
// counts it until its slices are seen smaller.
func (s *dstate) capOverCeiling(p *plan) {
	for _, m := range s.members {
		if !m.ownReclaim {
			continue
		}
		excess := vec{}
		for _, n := range m.names {
			if x := m.used[n] - s.ceiling(m, n); x > 0 {
				excess[n] = x
			}
		}
		if len(excess) == 0 {
			continue
		}
		keys := append([]types.NamespacedName(nil), m.order...)
		sort.SliceStable(keys, func(i, j int) bool {
			a, b := m.slices[keys[i]], m.slices[keys[j]]
			switch {
			case a.priority != b.priority:
				return a.priority < b.priority
			case !a.created.Equal(b.created):
				return a.created.After(b.created)
			}
			return a.key.String() < b.key.String()
		})
		for _, k := range keys {
			ds := m.slices[k]
			if ds.grew {
				continue // its admission is its decision; a later cycle caps it if need be
			}
			took := vec{}
			for n, x := range excess {
				take := min(x, ds.count[n])
				if take <= 0 {
					continue
				}
				// What it yields frees only once its slice is seen
				// smaller: m.used keeps counting it.
				ds.count[n] -= take
				took[n] = take
				if excess[n] = x - take; excess[n] == 0 {
					delete(excess, n)
				}
			}
			if len(took) > 0 {
				p.addCap(m, ds, capPart{reason: capForTotal}, took)
			}
			if len(excess) == 0 {
				break
			}
		}
	}
}

// stillInUse is what the slice's pods use above what it keeps.
func (ds *dslice) stillInUse(names []corev1.ResourceName) corev1.ResourceList {
	v := vec{}
	for n, x := range ds.inUse {
		if d := x - ds.count[n]; d > 0 {
			v[n] = d
		}
	}
	if len(v) == 0 {
		return nil
	}
	return v.list(names)
}

// borrows reports whether m counts more than its total of a resource.
func borrows(m *dmember) bool {
	for _, n := range m.names {
		if m.used[n] > m.total[n] {
			return true
		}
	}
	return false
}

func positive(v vec) bool {
	for _, x := range v {
		if x > 0 {
			return true
		}
	}
	return false
}

// String renders a plan for test failures: decisions and caps, sorted.
func (p plan) String() string {
	var lines []string
	for h, d := range p.decisions {
		switch d.kind {
		case decideAdmit:
			lines = append(lines, fmt.Sprintf("%s/%s: admit %s", h.Class, h.Key.Name, Amounts(d.offer)))
		default:
			lines = append(lines, fmt.Sprintf("%s/%s: wait %s %s %v reclaiming=%v", h.Class, h.Key.Name, d.block.member, d.block.reason, d.block.resources, d.reclaiming))
		}
	}
	for k, c := range p.caps {
		var parts []string
		for _, pt := range c.parts {
			parts = append(parts, fmt.Sprintf("%s %s for %s/%s cohort=%v", pt.reason, Amounts(pt.took), pt.waiter.Class, pt.waiter.Key.Name, pt.cohort))
		}
		lines = append(lines, fmt.Sprintf("%s: cap in %s to %s (%s)", k.Name, c.member, Amounts(c.keep), strings.Join(parts, "; ")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
