package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Waking: which waiting slices are promised what is free, and the wakes
// owed to classes, made after the lock is released.

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

// wakeLineLocked promises what is free to the waiting slices of the
// ledger's own line that fit (see wakeLocked), and returns a function that enqueues the newly promised ones, to be called
// without the lock. Fair order (the default) goes consumer by consumer,
// least-holding first (by the dominant share of the total), oldest first
// within one consumer; OldestFirst goes in creation order. Either way a
// waiter that does not fit does not block the rest.
func (l *Ledger) wakeLineLocked() func() {
	if l.line.len() == 0 {
		return func() {}
	}
	l.changedLocked() // what is promised changes
	free, _ := l.line.spare(l.freeLocked(), Holder{})
	fits := func(w *waiter) bool {
		if l.closed != "" || l.heldBackLocked(w.priority) > 0 || len(shortfall(l.books.names, w.increase, free, nil)) > 0 {
			return false
		}
		return len(consumerShort(l.limitLocked(w.consumer), l.books.byConsumer[w.consumer], w.increase, nil, l.line.promisedTo(w.consumer))) == 0
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
			l.line.fair(l.shareLocked, at, take, free)
		}
	}
	if l.opts.Preemption || l.reclaimsInCohortLocked() {
		// A waiter reclaimed for holds a promise already: it is woken once
		// what its victims held has freed enough for it.
		for _, w := range l.line.by {
			if !w.reclaiming {
				continue
			}
			mine, _ := l.line.spare(l.freeLocked(), w.Holder)
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

// wakeKeys returns a function that wakes keys through the class that
// serves each, to call without the lock.
func (l *Ledger) wakeKeys(keys []types.NamespacedName) func() {
	if len(keys) == 0 {
		return func() {}
	}
	type target struct {
		wake func(types.NamespacedName)
		key  types.NamespacedName
	}
	var ts []target
	// A cohort's victims are in other members' books: a key this
	// ledger's classes do not serve is woken through the member whose
	// class does.
	for _, k := range keys {
		if e := l.books.slices[k]; e != nil {
			if c, ok := l.books.classes[e.class]; ok && c.Wake != nil {
				ts = append(ts, target{c.Wake, k})
				continue
			}
		}
		for _, m := range l.others() {
			if e := m.books.slices[k]; e != nil && e.member {
				if c, ok := m.books.classes[e.class]; ok && c.Wake != nil {
					ts = append(ts, target{c.Wake, k})
					break
				}
			}
		}
	}
	return func() {
		for _, t := range ts {
			t.wake(t.key)
		}
	}
}

// Waiting slices are told what blocks them now at most once a
// refreshEvery, and refreshAfter after the first change since the last
// time: a quiet budget tells at once what changed, a busy one twice a
// second, so a waiter's figures are less than a second old.
const (
	refreshEvery = 500 * time.Millisecond
	refreshAfter = 50 * time.Millisecond
)

// changedLocked schedules a refresh after a change that may alter what
// blocks a waiting slice.
func (l *Ledger) changedLocked() {
	if l.refreshArmed || l.line.len() == 0 {
		return
	}
	l.refreshArmed = true
	if l.refreshHeld {
		return // run by RunPendingRefresh (see pending.go)
	}
	delay := refreshAfter
	if next := time.Until(l.refreshed.Add(refreshEvery)); next > delay {
		delay = next
	}
	time.AfterFunc(delay, l.refresh)
}

// refresh wakes the waiting slices whose block changed since they were
// last told (another reason, other figures), so that each one's condition
// names what blocks it now. Those that fit are woken by the promise that
// wakeLocked makes, not here; those capacity is reclaimed for hold a
// promise too, but wait on, and are told what is still in use.
func (l *Ledger) refresh() {
	l.lock()
	l.refreshArmed = false
	l.refreshed = time.Now()
	var picked []Holder
	l.line.each(func(w *waiter) bool {
		if w.promised && !w.reclaiming {
			return true // woken by its promise
		}
		reason, msg := l.blockLocked(w)
		if told := reason + ": " + msg; reason != "" && told != w.told {
			w.told = told
			picked = append(picked, w.Holder)
		}
		return true
	})
	wakes := make([]func(types.NamespacedName), len(picked))
	for i, h := range picked {
		wakes[i] = l.books.classes[h.Class].Wake
	}
	l.unlock()
	for i, h := range picked {
		if wakes[i] != nil {
			wakes[i](h.Key)
		}
	}
}

// takeReclaimsLocked returns a function that tells the hook of the
// reclaims noted, to call without the lock.
func (l *Ledger) takeReclaimsLocked() func() {
	rs, hook := l.reclaims, l.onReclaim
	l.reclaims = nil
	if len(rs) == 0 || hook == nil {
		return func() {}
	}
	return func() {
		for _, r := range rs {
			hook(r)
		}
	}
}

// owedLocked is what is owed, once the lock is released, after a change
// that moved caps and promises: the classes of victims (slices whose cap
// was set or lifted) woken, the reclaim hook told, and, when a promise was
// released, what is free promised again (wakeLocked).
func (l *Ledger) owedLocked(victims []types.NamespacedName, released bool) func() {
	woken := l.wakeKeys(victims)
	hook := l.takeReclaimsLocked()
	promised := func() {}
	if released {
		promised = l.wakeLocked()
	}
	return func() {
		woken()
		hook()
		promised()
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
