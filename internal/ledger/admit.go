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
	// Applied means the API server answered that it applied the write.
	Applied Outcome = iota
	// NotApplied means the server refused it (a conflict, an invalid status,
	// the slice gone) or no write was needed.
	NotApplied
	// Unknown means no answer came (a timeout, a 5xx, a cut connection); the server
	// may have applied it.
	Unknown
)

// Attempt is an admission assumed before its write: it counts until the
// cluster shows its outcome (Kueue's assume, then confirm or forget).
type Attempt struct {
	key   types.NamespacedName
	base  string // the resourceVersion the decision was computed from
	offer corev1.ResourceList
	done  bool
	// outcome is set when done.
	outcome Outcome
	// superseded: the slice was observed at a version newer than base, so
	// once the write ends the observation covers whatever it did.
	superseded bool
	dropped    bool
}

// settle applies an observation at rv to e's attempts: an observation
// newer than an attempt's base shows the write's effect (a write from base
// with optimistic locking is the first change after base) or that it was
// not applied, so a finished attempt is dropped and one in flight is dropped
// when it ends.
func (e *entry) settle(rv string) {
	kept := e.attempts[:0]
	for _, a := range e.attempts {
		if newer(rv, a.base) {
			a.superseded = true
			if a.done {
				a.dropped = true
				continue
			}
		}
		kept = append(kept, a)
	}
	clear(e.attempts[len(kept):])
	e.attempts = kept
}

// Admit assumes an acceptance of offer for h, decided from the slice at
// resourceVersion base: it fits when the increase over what the slice
// counts now fits what is free, less what is promised to older waiting
// slices. It returns the attempt to end with Done, or nil and a message
// naming what is short; the slice then waits in line.
func (l *Ledger) Admit(h Holder, base string, created time.Time, offer corev1.ResourceList) (*Attempt, string) {
	l.mu.Lock()
	short, promisedTo := l.fitLocked(h, offer)
	if len(short) > 0 {
		released := l.line.join(h, created, offer, l.increaseLocked(h.Key, offer))
		var wake func()
		if released {
			wake = l.wakeLocked()
		}
		l.mu.Unlock()
		if wake != nil {
			wake()
		}
		return nil, l.message(short, promisedTo)
	}
	released := l.line.remove(h)
	e := l.slices[h.Key]
	if e == nil {
		e = &entry{}
		l.slices[h.Key] = e
	}
	a := &Attempt{key: h.Key, base: base, offer: offer.DeepCopy()}
	// Decided from a version older than one already observed: a write from
	// it cannot apply (optimistic locking), so the observation covers it.
	a.superseded = e.seen && newer(e.rv, base)
	e.attempts = append(e.attempts, a)
	l.recount(h.Key, e)
	wake := func() {}
	if released {
		wake = l.wakeLocked() // admitted for less than it was promised
	}
	l.mu.Unlock()
	wake()
	return a, ""
}

// Check answers what Admit would, without assuming anything or joining
// the line: a dry run consults the budget but does not charge it.
func (l *Ledger) Check(h Holder, offer corev1.ResourceList) (bool, string) {
	l.mu.Lock()
	short, promisedTo := l.fitLocked(h, offer)
	l.mu.Unlock()
	if len(short) == 0 {
		return true, ""
	}
	return false, l.message(short, promisedTo)
}

// Done ends an attempt with the write's outcome.
func (l *Ledger) Done(a *Attempt, o Outcome) {
	if a == nil {
		return
	}
	l.mu.Lock()
	if a.dropped || a.done {
		l.mu.Unlock()
		return
	}
	a.done, a.outcome = true, o
	wake := func() {}
	if o == NotApplied || a.superseded {
		wake = l.forgetAttempt(a)
	} // else the watch settles it
	l.mu.Unlock()
	wake()
}

// forgetAttempt drops a from its slice; the caller holds the lock and
// calls the returned wake after releasing it.
func (l *Ledger) forgetAttempt(a *Attempt) func() {
	a.dropped = true
	e := l.slices[a.key]
	if e == nil {
		return func() {}
	}
	before := l.usedLocked()
	for i, x := range e.attempts {
		if x == a {
			e.attempts = append(e.attempts[:i], e.attempts[i+1:]...)
			break
		}
	}
	l.recount(a.key, e)
	return l.wakeIfFreedLocked(before)
}

// AwaitsOwnWrite reports whether an applied write to the slice was
// computed from resourceVersion rv: a cache still showing rv has not seen
// that write, and deciding from it would decide twice.
func (l *Ledger) AwaitsOwnWrite(key types.NamespacedName, rv string) bool {
	return l.hasAttempt(key, rv, Applied)
}

// Unsettled reports whether a write to the slice computed from rv ended
// with no answer: whether the server applied it is not known yet.
func (l *Ledger) Unsettled(key types.NamespacedName, rv string) bool {
	return l.hasAttempt(key, rv, Unknown)
}

func (l *Ledger) hasAttempt(key types.NamespacedName, rv string, o Outcome) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.slices[key]
	if e == nil {
		return false
	}
	for _, a := range e.attempts {
		if a.done && a.outcome == o && a.base == rv {
			return true
		}
	}
	return false
}

// NotApplied records that the API server still has the slice at rv: the
// writes computed from rv whose answers were lost were not applied.
func (l *Ledger) NotApplied(key types.NamespacedName, rv string) {
	l.mu.Lock()
	var wakes []func()
	if e := l.slices[key]; e != nil {
		for _, a := range append([]*Attempt(nil), e.attempts...) {
			if a.done && a.outcome == Unknown && a.base == rv {
				wakes = append(wakes, l.forgetAttempt(a))
			}
		}
	}
	l.mu.Unlock()
	for _, w := range wakes {
		w()
	}
}

// Leave takes h out of the waiting line: its decision ended without
// reaching the budget (a handler failure, a denial, the slice left the
// class). What it holds is not affected.
func (l *Ledger) Leave(h Holder) {
	l.mu.Lock()
	if !l.line.has(h) {
		l.mu.Unlock()
		return
	}
	var wake func()
	if l.line.remove(h) {
		wake = l.wakeLocked()
	}
	l.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// Waiting returns the holders waiting for capacity, in the order they are
// admitted.
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

// fitLocked lists what keeps offer from fitting for h, and how many older
// waiting slices the free capacity is promised to when that is what keeps
// it.
func (l *Ledger) fitLocked(h Holder, offer corev1.ResourceList) (short []string, promisedTo int) {
	var mine corev1.ResourceList
	if e := l.slices[h.Key]; e != nil {
		mine = e.counted
	}
	free := l.freeLocked()
	short = shortfall(l.names, offer, free, mine)
	if len(short) > 0 {
		return short, 0
	}
	promised, n := l.line.promisedExcept(h)
	if n == 0 {
		return nil, 0
	}
	for r, q := range promised {
		f := free[r]
		f.Sub(q)
		free[r] = f
	}
	return shortfall(l.names, offer, free, mine), n
}

// increaseLocked is what offer asks beyond what the slice counts now.
func (l *Ledger) increaseLocked(key types.NamespacedName, offer corev1.ResourceList) corev1.ResourceList {
	var mine corev1.ResourceList
	if e := l.slices[key]; e != nil {
		mine = e.counted
	}
	out := corev1.ResourceList{}
	for _, n := range l.names {
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

func (l *Ledger) message(short []string, promisedTo int) string {
	msg := "budget " + l.name + ": " + strings.Join(short, "; ")
	if promisedTo > 0 {
		msg += fmt.Sprintf(" (free capacity is promised to %d other waiting slice(s))", promisedTo)
	}
	return msg
}

// wakeIfFreedLocked wakes waiters when usage fell for some limited
// resource; nil when it did not.
func (l *Ledger) wakeIfFreedLocked(before corev1.ResourceList) func() {
	for _, n := range l.names {
		a, b := l.sum[n], before[n]
		if a.Cmp(b) < 0 {
			return l.wakeLocked()
		}
	}
	return func() {}
}

// wakeLocked promises what is free to the waiting slices that fit, in
// line order (one that does not fit does not block the rest), and returns
// a function that enqueues the newly promised ones, to be called without
// the lock.
func (l *Ledger) wakeLocked() func() {
	if l.line.len() == 0 {
		return func() {}
	}
	free := l.freeLocked()
	promised, _ := l.line.promisedExcept(Holder{})
	for r, q := range promised {
		f := free[r]
		f.Sub(q)
		free[r] = f
	}
	var picked []Holder
	l.line.each(func(w *waiter) bool {
		if w.promised {
			return true
		}
		if len(shortfall(l.names, w.increase, free, nil)) == 0 {
			for r, q := range w.increase {
				f := free[r]
				f.Sub(q)
				free[r] = f
			}
			l.line.promise(w)
			picked = append(picked, w.Holder)
		}
		return anyPositive(free)
	})
	wakes := make([]func(types.NamespacedName), len(picked))
	for i, h := range picked {
		wakes[i] = l.classes[h.Class].Wake
	}
	return func() {
		for i, h := range picked {
			if wakes[i] != nil {
				wakes[i](h.Key)
			}
		}
	}
}

func anyPositive(rl corev1.ResourceList) bool {
	for _, q := range rl {
		if q.Sign() > 0 {
			return true
		}
	}
	return false
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
