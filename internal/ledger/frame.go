package ledger

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// The snapshot decide reads, taken from the live books and lines of a
// domain under its one lock: the bridge from today's ledger to the loop
// of issue 50 (see decide.go). It reads and changes nothing.

// domainLocked is the ledgers of l's domain: its cohort's members, or l
// alone. The caller holds l's lock (the cohort's).
func (l *Ledger) domainLocked() []*Ledger {
	if l.cohort == nil {
		return []*Ledger{l}
	}
	return l.cohort.members
}

// frameLocked is the snapshot of l's domain, and its waiting slices (a
// slice waiting in two members is one waiter naming both). A member whose
// books are not counted, or whose settings are not read, pauses it.
func (l *Ledger) frameLocked() (frame, []frameWaiter) {
	var f frame
	inCohort := l.cohort != nil
	byHolder := map[Holder]*frameWaiter{}
	var order []Holder
	for _, m := range l.domainLocked() {
		switch {
		case m.unread != "":
			f.paused = "budget " + m.name + ": " + m.unread
		case m.uncounted:
			f.paused = "budget " + m.name + ": its feed has not counted what the cluster holds yet (it is starting, or restarted)"
		}
		fm := frameMember{name: m.name, total: m.books.total, ownReclaim: m.opts.Preemption, limit: m.opts.ConsumerLimit,
			limits: m.limits, closed: m.closed}
		if inCohort {
			fm.borrowing, fm.cohortReclaim = m.opts.BorrowingLimit, m.opts.ReclaimWithinCohort
			fm.lending = corev1.ResourceList{}
			for _, n := range m.books.names {
				fm.lending[n] = m.lendableLocked(n) // a member leaving lends nothing
			}
			if m.leaving != nil {
				fm.borrowing = corev1.ResourceList{}
				for _, n := range m.books.names {
					fm.borrowing[n] = resource.Quantity{} // nor borrows more
				}
			}
		}
		for key, e := range m.books.slices {
			if len(e.counted) == 0 {
				continue
			}
			fm.slices = append(fm.slices, frameSlice{key: key, consumer: e.consumer, priority: m.books.classes[e.class].Priority,
				created: e.created, counted: e.counted, inUse: e.inUse})
		}
		sort.Slice(fm.slices, func(i, j int) bool { return fm.slices[i].key.String() < fm.slices[j].key.String() })
		f.members = append(f.members, fm)
		for h, w := range m.line.by {
			fw := byHolder[h]
			if fw == nil {
				fw = &frameWaiter{Holder: h, offer: w.offer, priority: w.priority, consumer: w.consumer, created: w.created}
				byHolder[h] = fw
				order = append(order, h)
			}
			fw.members = append(fw.members, m.name)
		}
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.Key != b.Key {
			return a.Key.String() < b.Key.String()
		}
		return a.Class < b.Class
	})
	ws := make([]frameWaiter, 0, len(order))
	for _, h := range order {
		ws = append(ws, *byHolder[h])
	}
	return f, ws
}

// decidedWakesLocked returns a function, to call without the lock, that
// wakes the waiting slices of l's domain that decide (decide.go) admits
// or reclaims for on the domain as it stands: after a change of settings
// or membership, a waiter that fits, or fits once lower priorities yield,
// is decided again at once instead of when an unrelated change wakes it
// (issue 50, "a waiter that fits stalls"). The woken slices ask the
// budget again; the remembered caps and promises still decide what they
// are answered, until the loop publishes decide's plan itself.
func (l *Ledger) decidedWakesLocked() func() {
	f, ws := l.frameLocked()
	if f.paused != "" || len(ws) == 0 {
		return func() {}
	}
	p := decide(f, ws)
	var wakes []func(types.NamespacedName)
	var keys []types.NamespacedName
	// A waiter the remembered caps disagree with is woken too, to be
	// planned again: one the caps serve that decide reclaims nothing for
	// (its lender's policy changed, it left), one decide reclaims for
	// whose victims' caps were lifted (a borrower's own switch).
	stale := map[Holder]bool{}
	planned := map[Holder]bool{}
	for _, c := range p.caps {
		for _, part := range c.parts {
			if part.reason == capForWaiter {
				planned[part.waiter] = true
			}
		}
	}
	for _, m := range l.domainLocked() {
		for key, e := range m.books.slices {
			if e.capped == nil || e.capped.limit || e.capped.pool {
				continue
			}
			if !planned[e.capped.waiter] {
				stale[e.capped.waiter] = true
			}
			if c, ok := p.caps[key]; !ok || len(c.parts) == 0 {
				stale[e.capped.waiter] = true
			}
		}
	}
	for key, c := range p.caps {
		for _, part := range c.parts {
			if part.reason != capForWaiter {
				continue
			}
			if e := l.entryLocked(key); e == nil || e.capped == nil || e.capped.waiter != part.waiter {
				stale[part.waiter] = true
			} else if len(c.parts) == 1 && !equalLists(e.capped.keep, c.keep) {
				// It takes more, or less, than decide would now (the
				// cohort's totals changed): planned again, the surplus
				// goes back or the rest is taken.
				stale[part.waiter] = true
			}
		}
	}
	for _, w := range ws {
		d := p.decisions[w.Holder]
		if !stale[w.Holder] {
			if d.kind != decideAdmit && !d.reclaiming {
				continue
			}
			if l.wokenLocked(w.Holder, d.reclaiming) {
				continue // the line woke it already, or reclaims for it
			}
		}
		for _, m := range l.domainLocked() {
			if c, ok := m.books.classes[w.Class]; ok && c.Wake != nil {
				wakes, keys = append(wakes, c.Wake), append(keys, w.Key)
				break
			}
		}
	}
	return func() {
		for i, wake := range wakes {
			wake(keys[i])
		}
	}
}

// wokenLocked reports whether the lines of l's domain already woke h
// (promised it what is free) or, when reclaiming, reclaim for it.
func (l *Ledger) wokenLocked(h Holder, reclaiming bool) bool {
	for _, m := range l.domainLocked() {
		if w := m.line.by[h]; w != nil && (w.promised || (reclaiming && w.reclaiming)) {
			return true
		}
	}
	return false
}

// entryLocked is the entry of key in the member of l's domain whose
// class serves it, else in any member that counts it.
func (l *Ledger) entryLocked(key types.NamespacedName) *entry {
	var found *entry
	for _, m := range l.domainLocked() {
		if e := m.books.slices[key]; e != nil {
			if e.member {
				return e
			}
			found = e
		}
	}
	return found
}
