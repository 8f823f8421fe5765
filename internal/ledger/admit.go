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
// (ReasonExhausted or ReasonConsumerLimit), and a message naming each short
// resource.
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
	// ReasonConsumerLimit: the consumer would hold more than its limit.
	ReasonConsumerLimit = "ConsumerLimitReached"
	// ReasonNotCounted: the ledger's books were forgotten (its feed
	// stopped) and no feed has counted the cluster again. Nothing was
	// decided: the caller writes nothing and asks again later.
	ReasonNotCounted = "BudgetNotCounted"
)

// uncountedLocked is the refusal of a request to ls when one of them has
// no books (ForgetAll, no Counted since); nil otherwise. The caller holds
// the ledgers' locks.
func uncountedLocked(ls []*Ledger) *Refusal {
	for _, l := range ls {
		if l.unread != "" {
			return &Refusal{Budget: l.name, Reason: ReasonNotCounted, Message: "budget " + l.name + ": " + l.unread}
		}
		if l.uncounted {
			return &Refusal{Budget: l.name, Reason: ReasonNotCounted,
				Message: "budget " + l.name + ": what the cluster holds is being counted again (its feed restarted)"}
		}
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
		if l.books.decided(r.Key, &l.line) {
			lifted = append(lifted, l)
		}
	}
	var wakes []func()
	var refusal *Refusal
	for _, l := range ls {
		if reason, msg, short := l.fitLocked(r); reason != "" && refusal == nil {
			refusal = &Refusal{Budget: l.name, Reason: reason, Message: msg, Resources: short}
		}
	}
	if refusal != nil {
		for _, l := range ls {
			released := false
			if reason, msg, _ := l.fitLocked(r); reason != "" {
				released = l.line.join(r, l.increaseLocked(r.Key, r.Offer))
				w := l.line.by[r.Holder]
				if reason == ReasonExhausted && l.opts.Preemption {
					victims, reclaiming := l.reclaimLocked(w)
					wakes = append(wakes, l.wakeKeys(victims), l.takeReclaimsLocked())
					if reclaiming {
						reason, msg = l.blockLocked(w)
					}
				}
				w.told = reason + ": " + msg
				if l == refusalLedger(ls, refusal) {
					refusal.Message = msg
				}
			} else {
				released = l.line.remove(r.Holder)
				wakes = append(wakes, l.wakeKeys(l.uncapLocked(r.Holder)))
			}
			if released {
				wakes = append(wakes, l.wakeLocked())
			}
		}
		for _, l := range lifted {
			wakes = append(wakes, l.wakeLocked())
		}
		unlockAll(locked)
		for _, w := range wakes {
			w()
		}
		return nil, refusal
	}
	as := make([]*Attempt, len(ls))
	for i, l := range ls {
		back := l.takeDownLocked(r)
		released := l.line.remove(r.Holder)
		wakes = append(wakes, l.wakeKeys(l.uncapLocked(r.Holder)))
		if _, gone := l.books.gone[r.UID]; gone && r.UID != "" {
			// Deleted while it was decided: its write will find it gone,
			// and nothing must stay counted for it.
			as[i] = &Attempt{key: r.Key, base: r.Base, done: true, dropped: true}
			continue
		}
		as[i] = l.books.assume(r, back)
		if released {
			wakes = append(wakes, l.wakeLocked()) // admitted for less than it was promised
		}
	}
	for _, l := range lifted {
		wakes = append(wakes, l.wakeLocked())
	}
	unlockAll(locked)
	for _, w := range wakes {
		w()
	}
	return as, nil
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

// blockLocked is what blocks waiter w now: the reason and message
// fitLocked gives, and what is still in use of the capacity reclaimed for
// it.
func (l *Ledger) blockLocked(w *waiter) (reason, msg string) {
	reason, msg, _ = l.fitLocked(Request{Holder: w.Holder, Consumer: w.consumer, Created: w.created, Offer: w.offer, Priority: w.priority})
	if reason != "" && w.reclaiming {
		msg += l.reclaimNote(w.Holder)
	}
	return reason, msg
}

// lockAll locks each distinct ledger of ls in a global order (no
// deadlock between two AdmitAll over overlapping sets) and returns them.
func lockAll(ls []*Ledger) []*Ledger {
	sorted := make([]*Ledger, 0, len(ls))
	seen := map[*Ledger]bool{}
	for _, l := range ls {
		if !seen[l] {
			seen[l] = true
			sorted = append(sorted, l)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].id < sorted[j].id })
	for _, l := range sorted {
		l.mu.Lock()
	}
	return sorted
}

func unlockAll(ls []*Ledger) {
	for i := len(ls) - 1; i >= 0; i-- {
		ls[i].mu.Unlock()
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
		l.books.decided(r.Key, &l.line) // a dry run decides too; it promises nothing, so lifts nothing to wake
	}
	for _, l := range ls {
		if reason, msg, short := l.fitLocked(r); reason != "" {
			return &Refusal{Budget: l.name, Reason: reason, Message: msg, Resources: short}
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
	l.mu.Lock()
	if a.dropped || a.done {
		l.mu.Unlock()
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
	l.mu.Unlock()
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
	l.mu.Lock()
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
	l.mu.Unlock()
	for _, w := range wakes {
		w()
	}
	return again
}

// Leave takes h out of the waiting line: its decision ended without
// reaching the budget (a handler failure, a denial, the slice left the
// class). What it holds is not affected.
func (l *Ledger) Leave(h Holder) {
	l.mu.Lock()
	lifted := l.books.decided(h.Key, &l.line)
	if !l.line.has(h) {
		var wake func()
		if lifted {
			wake = l.wakeLocked()
		}
		l.mu.Unlock()
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
	l.mu.Unlock()
	if wake != nil {
		wake()
	}
	uncapped()
}

// WaitingCount returns how many slices wait for capacity.
func (l *Ledger) WaitingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.line.len()
}

// Waiting returns the holders waiting for capacity, in creation order.
func (l *Ledger) Waiting() []Holder {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Holder
	l.line.each(func(w *waiter) bool {
		out = append(out, w.Holder)
		return true
	})
	return out
}

// fitLocked says why r does not fit: ReasonExhausted with a message
// naming what is short (and how many other waiting slices the free capacity
// is promised to, when that is what keeps it), ReasonConsumerLimit, or ""
// when it fits.
func (l *Ledger) fitLocked(r Request) (reason, msg string, resources []string) {
	if reason, msg, resources = l.closedFitLocked(r); reason != "" {
		return reason, msg, resources
	}
	mine := l.growsFromLocked(r.Key)
	free := l.books.free()
	// What is promised to the consumer's other waiters is theirs: a newer
	// slice must not take an older one's place under the limit.
	consumerShort := l.consumerShortLocked(r.Consumer, r.Offer, mine, l.line.promisedToOthers(r.Consumer, r.Holder))
	if short := shortfall(l.books.names, r.Offer, free, mine); len(short) > 0 {
		return ReasonExhausted, l.message(short, false) + l.fitsOnlyIfLocked(r, mine, consumerShort), shortNames(short)
	}
	if len(consumerShort) > 0 {
		return ReasonConsumerLimit, fmt.Sprintf("budget %s: consumer %q is at its limit: %s", l.name, r.Consumer, strings.Join(consumerShort, "; ")) +
			l.fitsOnlyIfLocked(r, mine, nil), shortNames(consumerShort)
	}
	if promised, n := l.line.promisedExcept(r.Holder); n > 0 {
		for name, q := range promised {
			sub(free, name, q)
		}
		if short := shortfall(l.books.names, r.Offer, free, mine); len(short) > 0 {
			return ReasonExhausted, l.message(short, true), shortNames(short)
		}
	}
	if n := l.books.heldBack(r.Priority); n > 0 && anyPositive(l.increaseLocked(r.Key, r.Offer)) {
		return ReasonExhausted, l.heldBackMessage(r.Priority, n), l.growingNames(r.Key, r.Offer)
	}
	return "", "", nil
}

// growingNames are the names of the resources offer asks more of than the
// slice key grows from, sorted.
func (l *Ledger) growingNames(key types.NamespacedName, offer corev1.ResourceList) []string {
	var out []string
	for _, n := range sortedNames(l.increaseLocked(key, offer)) { // positive increases only
		out = append(out, string(n))
	}
	return out
}

// fitsOnlyIfLocked says what would have to change for r to fit, where
// capacity freeing in the budget is not enough (as Kueue's pending reasons
// say "request > maximum capacity"): an offer beyond the budget's total,
// beyond its consumer's limit, or one its consumer's other holdings keep
// over that limit (consumerShort, when the budget's shortfall is what the
// message names first). "" when freed capacity alone would do.
func (l *Ledger) fitsOnlyIfLocked(r Request, mine corev1.ResourceList, consumerShort []string) string {
	var notes []string
	for _, n := range l.books.names {
		want, asked := r.Offer[n]
		if total := l.books.total[n]; asked && want.Cmp(total) > 0 {
			notes = append(notes, fmt.Sprintf("%s: asked %s, more than the budget's total %s: it fits only if the total grows", n, want.String(), total.String()))
		}
	}
	limit := l.limitLocked(r.Consumer)
	for _, n := range sortedNames(limit) {
		want, asked := r.Offer[n]
		lim := limit[n]
		if !asked {
			continue
		}
		if want.Cmp(lim) > 0 {
			notes = append(notes, fmt.Sprintf("%s: asked %s, more than consumer %q's limit %s: it fits only if that limit is raised", n, want.String(), r.Consumer, lim.String()))
			continue
		}
		if len(consumerShort) == 0 {
			continue
		}
		// Within the limit alone, but not beside what the consumer holds.
		after := l.books.byConsumer[r.Consumer][n].DeepCopy()
		after.Add(want)
		if m, ok := mine[n]; ok {
			after.Sub(m)
		}
		if after.Cmp(lim) > 0 {
			over := after.DeepCopy()
			over.Sub(lim)
			notes = append(notes, fmt.Sprintf("%s: consumer %q would hold %s of its limit %s: it fits only if its other slices release %s or its limit is raised",
				n, r.Consumer, after.String(), lim.String(), over.String()))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// shortNames are the resource names of shortfall lines ("cpu: asked ...").
func shortNames(short []string) []string {
	out := make([]string, len(short))
	for i, s := range short {
		out[i], _, _ = strings.Cut(s, ":")
	}
	return out
}

// consumerShortLocked lists what keeps consumer within its limit if one of
// its slices, growing from mine, is granted offer (and extra is set aside
// for it besides); nil when consumers are not limited or it fits. As for
// the budget's total, only an increase over mine must fit: an offer that
// asks no more than the slice grows from takes nothing, and is never
// refused, even from a consumer above its limit (a reclaimed slice whose
// Quota and pods still hold more than its smaller offer).
func (l *Ledger) consumerShortLocked(consumer string, offer, mine, extra corev1.ResourceList) []string {
	limit := l.limitLocked(consumer)
	if len(limit) == 0 {
		return nil
	}
	held := l.books.byConsumer[consumer]
	var short []string
	for _, n := range sortedNames(limit) {
		want, asked := offer[n]
		if !asked {
			continue
		}
		m, holds := mine[n]
		if holds && want.Cmp(m) <= 0 {
			continue
		}
		after := held[n].DeepCopy()
		after.Add(want)
		after.Sub(m)
		after.Add(extra[n])
		if after.Cmp(limit[n]) > 0 {
			h, lim := held[n], limit[n]
			short = append(short, fmt.Sprintf("%s: asked %s, holds %s, limit %s", n, want.String(), h.String(), lim.String()))
		}
	}
	return short
}

// growsFromLocked is what an offer for the slice key is measured from:
// what it counts now; for a slice shrunk by a reclaim (its condition says
// Reclaimed), the offer it was left with and its writes in flight. What
// its pods still use beyond that, and its Quota while Liqo has not yet
// lowered it to the smaller offer, are being taken back, not room for it
// to grow into: without this rule a victim whose cap is not known (a new
// leader, before the waiter it yielded to is decided again) would be
// granted its old offer back at once, undoing the reclaim.
func (l *Ledger) growsFromLocked(key types.NamespacedName) corev1.ResourceList {
	e := l.books.slices[key]
	switch {
	case e == nil:
		return nil
	case e.reclaimed:
		return e.offered()
	default:
		return e.counted
	}
}

// increaseLocked is what offer asks beyond what the slice grows from.
func (l *Ledger) increaseLocked(key types.NamespacedName, offer corev1.ResourceList) corev1.ResourceList {
	mine := l.growsFromLocked(key)
	out := corev1.ResourceList{}
	for _, n := range l.books.names {
		want, ok := offer[n]
		if !ok {
			continue
		}
		if m, ok := mine[n]; ok {
			want = want.DeepCopy()
			want.Sub(m)
		}
		if want.Sign() > 0 {
			out[n] = want
		}
	}
	return out
}

// message names the budget and what is short. Its figures are what is
// free now, net of what is promised to other waiting slices when promised
// is set (and it says so), so that a waiter's message changes only when
// what blocks it changes, not with every promise made and kept.
func (l *Ledger) message(short []string, promised bool) string {
	msg := "budget " + l.name + ": " + strings.Join(short, "; ")
	if promised {
		msg += " (after what is promised to other waiting slices)"
	}
	return msg
}

// wakeIfFreedLocked wakes waiters when usage fell for some limited
// resource; nil when it did not.
func (l *Ledger) wakeIfFreedLocked(before corev1.ResourceList) func() {
	for _, n := range l.books.names {
		a, b := l.books.sum[n], before[n]
		if a.Cmp(b) < 0 {
			return l.wakeLocked()
		}
	}
	return func() {}
}

// wakeLocked promises what is free to the waiting slices that fit, and
// returns a function that enqueues the newly promised ones, to be called
// without the lock. Fair order (the default) goes consumer by consumer,
// least-holding first (by the dominant share of the total), oldest first
// within one consumer; OldestFirst goes in creation order. Either way a
// waiter that does not fit does not block the rest.
func (l *Ledger) wakeLocked() func() {
	if l.line.len() == 0 {
		return func() {}
	}
	l.changedLocked() // what is promised changes
	free := l.books.free()
	promised, _ := l.line.promisedExcept(Holder{})
	for n, q := range promised {
		sub(free, n, q)
	}
	fits := func(w *waiter) bool {
		if l.closed != "" || l.books.heldBack(w.priority) > 0 || len(shortfall(l.books.names, w.increase, free, nil)) > 0 {
			return false
		}
		return len(l.consumerShortLocked(w.consumer, w.increase, nil, l.line.promisedTo(w.consumer))) == 0
	}
	var picked []Holder
	take := func(w *waiter) {
		for n, q := range w.increase {
			sub(free, n, q)
		}
		l.line.promise(w)
		picked = append(picked, w.Holder)
	}
	// Higher priorities first; within one, fair (or oldest-first) order.
	for _, p := range l.line.priorities() {
		at := func(w *waiter) bool { return w.priority == p && fits(w) }
		if l.opts.OldestFirst {
			l.line.each(func(w *waiter) bool {
				if !w.promised && at(w) {
					take(w)
				}
				return anyPositive(free)
			})
		} else {
			l.fairLocked(at, take, free)
		}
	}
	if l.opts.Preemption {
		// A waiter reclaimed for holds a promise already: it is woken once
		// what its victims held has freed enough for it.
		for _, w := range l.line.by {
			if !w.reclaiming {
				continue
			}
			mine := l.books.free()
			others, _ := l.line.promisedExcept(w.Holder)
			for n, q := range others {
				sub(mine, n, q)
			}
			if len(shortfall(l.books.names, w.increase, mine, nil)) == 0 {
				picked = append(picked, w.Holder)
			}
		}
	}
	wakes := make([]func(types.NamespacedName), len(picked))
	for i, h := range picked {
		wakes[i] = l.books.classes[h.Class].Wake
	}
	return func() {
		for i, h := range picked {
			if wakes[i] != nil {
				wakes[i](h.Key)
			}
		}
	}
}

// shortfall lists, for each limited resource, why offer does not fit free
// for a slice that counts mine now: only the increase over mine must fit,
// so an acceptance the budget already counts is never revoked by a smaller
// total.
func shortfall(names []corev1.ResourceName, offer, free, mine corev1.ResourceList) []string {
	var short []string
	for _, n := range names {
		want, asked := offer[n]
		if !asked {
			continue
		}
		m, holds := mine[n]
		need := want.DeepCopy()
		if holds {
			if want.Cmp(m) <= 0 {
				continue
			}
			need.Sub(m)
		}
		f := free[n]
		if need.Cmp(f) <= 0 {
			continue
		}
		shown := f.DeepCopy()
		if shown.Sign() < 0 {
			shown = resource.Quantity{}
		}
		if holds && m.Sign() > 0 {
			short = append(short, fmt.Sprintf("%s: asked %s, holds %s, %s free", n, want.String(), m.String(), shown.String()))
		} else {
			short = append(short, fmt.Sprintf("%s: asked %s, %s free", n, want.String(), shown.String()))
		}
	}
	sort.Strings(short)
	return short
}
