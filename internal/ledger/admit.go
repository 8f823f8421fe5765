package ledger

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Outcome is how the write of an admitted offer ended.
type Outcome int

const (
	// Applied means the API server answered that it applied the write: the
	// attempt counts until the watch shows the slice past the version it
	// was decided from.
	Applied Outcome = iota
	// NotApplied means the server refused it (a conflict, an invalid status,
	// the slice gone) or no write was needed: the attempt is forgotten at
	// once.
	NotApplied
	// Unknown means the server (or a proxy before it) answered with an error
	// that does not say whether it applied the write (a 5xx, a 429): the
	// request is over, so the watch showing a newer version, or one read
	// showing the version it was decided from, settles it.
	Unknown
	// Lost means no answer came (a timeout, a cut connection, a cancelled
	// context): the server may still be applying it, so a read settles it
	// only once the server's request timeout has passed (see SettleRead);
	// the watch settles it as for Unknown.
	Lost
	// Conflicted means the server refused it for a newer version of the
	// slice: forgotten at once, as NotApplied, and the slice is decided
	// again from that version; an admission for reclaimed capacity gets
	// back its place in line and its victims' caps meanwhile.
	Conflicted
)

// InFlightBound bounds how long a write whose answer was lost may still be
// applied by the API server: its request timeout (60s by default) and a
// margin.
const InFlightBound = 70 * time.Second

// Attempt is an admission assumed before its write: it counts until the
// cluster shows its outcome (Kueue's assume, then confirm or forget).
type Attempt struct {
	key   types.NamespacedName
	base  string // the resourceVersion the decision was computed from
	offer corev1.ResourceList
	done  bool
	// outcome and doneAt are set when done.
	outcome Outcome
	doneAt  time.Time
	// superseded: the slice was observed at a version newer than base, so
	// once the write ends the observation covers whatever it did.
	superseded bool
	dropped    bool
	// back is what the admission took down, put back if the write is not
	// applied (see putBackLocked); nil when it took nothing down.
	back *waitBack
}

// Request is an acceptance to admit: the offer the handler decided for a
// slice of a class, from the slice at resourceVersion Base.
type Request struct {
	Holder
	// UID is the slice's UID: a slice already deleted is admitted nothing.
	UID      types.UID
	Base     string
	Created  time.Time
	Consumer string
	Offer    corev1.ResourceList
	// Priority is the class's priority.
	Priority int32
}

// Refusal says why a request did not fit: which budget, which reason
// (ReasonExhausted, ReasonConsumerLimit or ReasonUnavailable), and a
// message naming each short resource, or the cause of an unavailable
// budget. The message changes only when what blocks the slice changes in
// kind: it carries no figure that moves with other slices (see verdict).
type Refusal struct {
	Budget  string
	Reason  string
	Message string
	// Resources are the short resources' names, sorted.
	Resources []string
}

// The reasons of a Refusal.
const (
	// ReasonExhausted: the budget has not enough free.
	ReasonExhausted = "BudgetExhausted"
	// ReasonUnavailable: the budget admits nothing new for a cause other
	// than its capacity (SetClosed: its SliceBudget missing, its spec
	// refused, its node pool unreadable); the message names the budget and
	// the cause.
	ReasonUnavailable = "BudgetUnavailable"
	// ReasonConsumerLimit: the consumer would hold more than its limit.
	ReasonConsumerLimit = "ConsumerLimitReached"
	// ReasonNotCounted: the ledger's books were forgotten (its feed
	// stopped) and no feed has counted the cluster again. Nothing was
	// decided: the caller writes nothing and asks again later.
	ReasonNotCounted = "BudgetNotCounted"
)

// uncountedLocked is the refusal of a request to ls when one of them has
// no books (ForgetAll, no Counted since) or unread settings; nil
// otherwise. In a cohort, a member whose books are not counted pauses
// the whole domain (issue 50, scenario 1): what its slices hold is
// unknown, so nothing it might lend is free. A member with no class
// attached pauses nothing (its feed is not counting it again: a class
// stopped at run time); what its slices still hold is the open part of
// scenario 2. The caller holds the ledgers' locks.
func uncountedLocked(ls []*Ledger) *Refusal {
	for _, l := range ls {
		if r := l.notCountedLocked(); r != nil {
			return r
		}
	}
	for _, l := range ls {
		for _, m := range l.domainLocked() {
			if m != l && len(m.books.classes) > 0 {
				if r := m.notCountedLocked(); r != nil {
					r.Message = "budget " + l.name + " waits for a member of its cohort: " + r.Message
					return r
				}
			}
		}
	}
	return nil
}

// notCountedLocked is l's own ReasonNotCounted refusal, nil when its
// books are counted and its settings read.
func (l *Ledger) notCountedLocked() *Refusal {
	if l.unread != "" {
		return &Refusal{Budget: l.name, Reason: ReasonNotCounted, Message: "budget " + l.name + ": " + l.unread}
	}
	if l.uncounted {
		return &Refusal{Budget: l.name, Reason: ReasonNotCounted,
			Message: "budget " + l.name + ": its feed has not counted what the cluster holds yet (it is starting, or restarted)"}
	}
	return nil
}

// AdmitAll admits r in every ledger of ls or in none (never a partial
// hold): in each, the increase over what the slice counts now must fit what
// is free, less what is promised to other waiting slices, and keep the
// consumer within its limit. On success it returns one attempt per ledger,
// in ls's order, to end with Done. Otherwise the slice waits in line in the
// ledgers it does not fit (and leaves the others' lines), and the refusal
// names the first ledger of ls that refused; a ledger whose books are not
// counted (ForgetAll) refuses with ReasonNotCounted, and the slice does not
// join any line.
func AdmitAll(ls []*Ledger, r Request) ([]*Attempt, *Refusal) {
	locked := lockAll(ls)
	if refusal := uncountedLocked(ls); refusal != nil {
		unlockAll(locked)
		return nil, refusal
	}
	// Decided now: r no longer holds lower priorities back. Those it held
	// are woken after r itself joined the line or was admitted, so that
	// what they may be promised is what r leaves.
	var lifted []*Ledger
	for _, l := range ls {
		if l.books.decided(r.Key, l.line.has) {
			lifted = append(lifted, l)
		}
	}
	verdicts := make([]verdict, len(ls))
	var refusal *Refusal
	// Each verdict is judged on the books as the earlier ones would leave
	// them: one request to two members of a cohort draws twice from one
	// pool (issue 50, scenario 3). What is counted ahead is taken back
	// before anything is assumed.
	ahead := make([]corev1.ResourceList, len(ls))
	for i, l := range ls {
		v := l.fitLocked(r)
		verdicts[i] = v
		if v.reason != "" && refusal == nil {
			refusal = &Refusal{Budget: l.name, Reason: v.reason, Message: v.msg, Resources: v.short}
		}
		if v.reason == "" && len(ls) > 1 && l.cohort != nil {
			ahead[i] = v.increase
			for n, q := range v.increase {
				add(l.books.sum, n, q)
			}
		}
	}
	for i, l := range ls {
		for n, q := range ahead[i] {
			sub(l.books.sum, n, q)
		}
	}
	var as []*Attempt
	wakes := make([]func(), 0, len(ls)+len(lifted))
	if refusal != nil {
		plans := reclaimPlansLocked(ls, r, verdicts)
		for i, l := range ls {
			var plan *reclaimPlan
			if plans != nil {
				plan = plans[i]
			}
			msg, wake := l.waitLocked(r, verdicts[i], plan)
			if l == refusalLedger(ls, refusal) {
				refusal.Message = msg
			}
			wakes = append(wakes, wake)
		}
	} else {
		as = make([]*Attempt, len(ls))
		for i, l := range ls {
			var wake func()
			as[i], wake = l.admitLocked(r, verdicts[i])
			wakes = append(wakes, wake)
		}
	}
	for _, l := range lifted {
		wakes = append(wakes, l.wakeLocked())
	}
	unlockAll(locked)
	for _, w := range wakes {
		w()
	}
	return as, refusal
}

// waitLocked makes r wait in l's line, where it was refused (v), and
// reclaims for it by plan (reclaimPlansLocked's; nil when it would not
// fit once victims shrink, and then what was taken for it goes back);
// where it fits, it leaves l's line. It returns the message r's condition
// carries for l, and the wakes owed, to call without the lock.
func (l *Ledger) waitLocked(r Request, v verdict, plan *reclaimPlan) (string, func()) {
	var victims []types.NamespacedName
	var released bool
	if v.reason == "" {
		victims = l.uncapLocked(r.Holder)
		released = l.line.remove(r.Holder)
	} else {
		released = l.line.join(r, v.increase)
		w := l.line.by[r.Holder]
		var reclaiming bool
		victims, reclaiming = l.reclaimLocked(w, plan)
		if reclaiming {
			// What blocks it is what blocked it (a reclaim changes what
			// victims keep, not what they count), and what of the
			// reclaimed capacity is still in use.
			v.msg += l.reclaimWait(w.Holder)
			l.line.promise(w) // what is reclaimed is its own
			w.reclaiming = true
		}
		w.told = v.reason + ": " + v.msg
	}
	return v.msg, l.owedLocked(victims, released)
}

// admitLocked assumes r in l: it leaves l's line, the caps made for it
// are lifted, and its offer counts until the cluster shows its outcome.
// It returns the attempt and the wakes owed, to call without the lock.
func (l *Ledger) admitLocked(r Request, v verdict) (*Attempt, func()) {
	back := l.takeDownLocked(r, v.increase)
	uncapped := l.admittedLocked(r.Holder)
	released := l.line.remove(r.Holder)
	a := l.books.assume(r, back)
	// released: admitted for less than it was promised (a slice deleted
	// meanwhile wakes no one).
	return a, l.owedLocked(uncapped, released && !a.dropped)
}

// refusalLedger is the ledger of ls that refusal names.
func refusalLedger(ls []*Ledger, refusal *Refusal) *Ledger {
	for _, l := range ls {
		if l.name == refusal.Budget {
			return l
		}
	}
	return nil
}

// lockAll locks the lock of each ledger of ls, once each (members of a
// cohort share one), in a global order (no deadlock between two AdmitAll
// over overlapping sets), and returns the locks held. A ledger that moved
// to another lock while it waited (it joined or left a cohort) makes it
// start again.
func lockAll(ls []*Ledger) []*lockBox {
	for {
		boxes := make([]*lockBox, 0, len(ls))
		seen := make(map[*lockBox]bool, len(ls))
		for _, l := range ls {
			if b := l.lk.Load(); !seen[b] {
				seen[b] = true
				boxes = append(boxes, b)
			}
		}
		sort.Slice(boxes, func(i, j int) bool { return boxes[i].id < boxes[j].id })
		for _, b := range boxes {
			b.mu.Lock()
		}
		moved := false
		for _, l := range ls {
			if !seen[l.lk.Load()] {
				moved = true
				break
			}
		}
		if !moved {
			return boxes
		}
		unlockAll(boxes)
	}
}

func unlockAll(boxes []*lockBox) {
	for i := len(boxes) - 1; i >= 0; i-- {
		boxes[i].mu.Unlock()
	}
}

// CheckAll answers what AdmitAll would, without assuming anything or
// joining a line.
func CheckAll(ls []*Ledger, r Request) *Refusal {
	locked := lockAll(ls)
	defer unlockAll(locked)
	if refusal := uncountedLocked(ls); refusal != nil {
		return refusal
	}
	for _, l := range ls {
		l.books.decided(r.Key, l.line.has) // a dry run decides too; it promises nothing, so lifts nothing to wake
	}
	for _, l := range ls {
		if v := l.fitLocked(r); v.reason != "" {
			return &Refusal{Budget: l.name, Reason: v.reason, Message: v.msg, Resources: v.short}
		}
	}
	return nil
}

// Done ends an attempt with the write's outcome. An Applied, Unknown or
// Lost attempt the watch has not yet settled keeps counting; for Unknown and
// Lost, the caller asks for one read of the slice (SettleRead) so that a
// write the server never applied does not wait for a change of the slice
// that may never come.
func (l *Ledger) Done(a *Attempt, o Outcome) {
	if a == nil {
		return
	}
	l.lock()
	if a.dropped || a.done {
		l.unlock()
		return
	}
	a.done, a.outcome, a.doneAt = true, o, time.Now()
	wake := func() {}
	if o == Conflicted {
		l.putBackLocked(a)
	}
	if o == NotApplied || o == Conflicted || a.superseded {
		wake = l.forgetAttempt(a)
	}
	l.unlock()
	wake()
}

// forgetAttempt drops a from its slice; the caller holds the lock and
// calls the returned wake after releasing it.
func (l *Ledger) forgetAttempt(a *Attempt) func() {
	before := l.books.used()
	if !l.books.forget(a) {
		return func() {}
	}
	return l.wakeIfFreedLocked(before)
}

// SettleRead records that the API server showed the slice at rv when it
// was read at readAt: the writes decided from rv whose answers did not say
// whether they were applied, and ended before readAt, were not (a write
// with rv as its precondition that the server applied is the first change
// after rv). A write that ended at or after readAt is not settled by this
// read: the caller reads again after its answer. An Unknown attempt
// is forgotten; a Lost one only when its answer was lost longer than
// InFlightBound before the read, since the server may still be applying it
// until then. It returns how long to wait before reading again for the
// Lost attempts left, or 0 when none is left.
func (l *Ledger) SettleRead(key types.NamespacedName, rv string, readAt time.Time) (again time.Duration) {
	l.lock()
	var wakes []func()
	if e := l.books.slices[key]; e != nil {
		for _, a := range append([]*Attempt(nil), e.attempts...) {
			if !a.done || a.base != rv || (a.outcome != Unknown && a.outcome != Lost) {
				continue
			}
			if !a.doneAt.Before(readAt) {
				// The read started before the answer came: the server may
				// have answered it before applying the write (a retry
				// from the same base ended while it was being read). The
				// read asked for after this answer settles it.
				continue
			}
			if a.outcome == Unknown || readAt.Sub(a.doneAt) > InFlightBound {
				l.putBackLocked(a) // not applied: decided again
				wakes = append(wakes, l.forgetAttempt(a))
				continue
			}
			if left := InFlightBound - readAt.Sub(a.doneAt) + time.Millisecond; left > again {
				again = left
			}
		}
	}
	l.unlock()
	for _, w := range wakes {
		w()
	}
	return again
}

// Leave takes h out of the waiting line: its decision ended without
// reaching the budget (a handler failure, a denial, the slice left the
// class). What it holds is not affected.
func (l *Ledger) Leave(h Holder) {
	l.lock()
	lifted := l.books.decided(h.Key, l.line.has)
	if !l.line.has(h) {
		var wake func()
		if lifted {
			wake = l.wakeLocked()
		}
		l.unlock()
		if wake != nil {
			wake()
		}
		return
	}
	var wake func()
	if l.line.remove(h) || lifted {
		wake = l.wakeLocked()
	}
	uncapped := l.wakeKeys(l.uncapLocked(h))
	l.unlock()
	if wake != nil {
		wake()
	}
	uncapped()
}

// WaitingCount returns how many slices wait for capacity.
func (l *Ledger) WaitingCount() int {
	l.lock()
	defer l.unlock()
	return l.line.len()
}

// Waiting returns the holders waiting for capacity, in creation order.
func (l *Ledger) Waiting() []Holder {
	l.lock()
	defer l.unlock()
	var out []Holder
	l.line.each(func(w *waiter) bool {
		out = append(out, w.Holder)
		return true
	})
	return out
}
