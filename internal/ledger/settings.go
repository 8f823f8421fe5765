package ledger

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Settings changed at run time, for a budget that follows an object
// (budget.FromObject): its limited resources and total, preemption, the
// consumer limits and the eviction delay, each taking effect at once by
// the rules of SetTotal and SetConsumerLimit; and a closed ledger, which
// admits nothing new and revokes nothing, for a budget whose object is
// gone. Reclaims are reported to a hook (reclaim.go), so that the
// budget's owner can say so once per reclaim.

// SetClosed closes the ledger with reason, or opens it again with "". A
// closed ledger admits nothing new: an offer asking more than its slice
// holds waits (ReasonUnavailable) with a message naming the budget and
// reason, and no slice is reclaimed for it; it revokes nothing (an offer
// within what its slice holds is admitted as before). Opening it wakes
// the waiting slices that fit.
func (l *Ledger) SetClosed(reason string) {
	l.lock()
	if l.closed == reason {
		l.unlock()
		return
	}
	l.closed = reason
	l.changedLocked() // waiters are told why, or what blocks them now
	wake := func() {}
	if reason == "" {
		wake = l.wakeLocked()
	}
	l.unlock()
	wake()
}

// SetUndecided makes the ledger decide nothing, with reason, or decide
// again with "": while it is set, every request is refused with
// ReasonNotCounted (the caller writes nothing and asks again later), as
// while the books are counted again. A budget whose settings are not read
// yet must not deny what it may admit a moment later.
func (l *Ledger) SetUndecided(reason string) {
	l.lock()
	if l.unread == reason {
		l.unlock()
		return
	}
	l.unread = reason
	wake := func() {}
	if reason == "" {
		wake = l.wakeLocked()
	}
	l.unlock()
	wake()
}

// CheckSettings returns the error SetLimits (for a total that is not nil)
// or SetConsumerLimits would return for these settings, changing nothing;
// nil when they would accept them.
func CheckSettings(total, limit corev1.ResourceList, overrides map[string]corev1.ResourceList) error {
	if total != nil && len(total) == 0 {
		return errors.New("empty total: name every resource it limits")
	}
	if err := checkQuantities("total", total); err != nil {
		return err
	}
	if err := checkQuantities("consumer limit", limit); err != nil {
		return err
	}
	for _, c := range slices.Sorted(maps.Keys(overrides)) {
		if c == "" {
			return errors.New("consumer limit for an empty consumer: name the consumer's cluster ID")
		}
		if err := checkQuantities(fmt.Sprintf("consumer limit of %q", c), overrides[c]); err != nil {
			return err
		}
	}
	return nil
}

// Closed returns why the ledger admits nothing new; "" when it is open.
func (l *Ledger) Closed() string {
	l.lock()
	defer l.unlock()
	return l.closed
}

// SetLimits makes total the ledger's capacity and its resources the ones
// the ledger limits, which New fixes and SetTotal keeps: a resource total
// does not name is no longer limited, one it names newly is. Growing wakes
// waiting slices; shrinking admits nothing new until usage fits and, with
// Preemption, shrinks the lowest priorities as SetTotal does. It refuses
// an empty total and negative quantities, and then changes nothing.
func (l *Ledger) SetLimits(total corev1.ResourceList) error {
	if len(total) == 0 {
		return fmt.Errorf("budget %q: empty total: name every resource it limits", l.name)
	}
	if err := checkQuantities("total", total); err != nil {
		return fmt.Errorf("budget %q: %w", l.name, err)
	}
	names := slices.Sorted(maps.Keys(total))
	l.lock()
	if !slices.Equal(names, l.books.names) {
		l.books.names = names
		// Waiters' increases were measured on the old resources.
		l.line.each(func(w *waiter) bool {
			promised := l.line.unpromise(w)
			w.increase = l.increaseLocked(w.Key, w.offer)
			if promised {
				l.line.promise(w)
			}
			return true
		})
	}
	l.setTotalLocked(total.DeepCopy())
	return nil
}

// SetPreemption turns Options.Preemption on or off. Turned on, the slices
// waiting for capacity are decided again, and may reclaim from lower
// priorities, and a total below what is held shrinks the lowest
// priorities; turned off, the caps made for waiting slices and for a
// smaller total are lifted (those made for a consumer's limit stay), and
// no slice is reclaimed from any more.
func (l *Ledger) SetPreemption(on bool) {
	l.lock()
	if l.opts.Preemption == on {
		l.unlock()
		return
	}
	l.opts.Preemption = on
	var keys []types.NamespacedName
	var woken []Holder
	if on {
		keys = l.fitTotalLocked()
		l.line.each(func(w *waiter) bool {
			woken = append(woken, w.Holder)
			return true
		})
	} else {
		for h := range l.victims {
			keys = append(keys, l.uncapLocked(h)...)
		}
		for key, e := range l.books.slices {
			if e.capped != nil && e.capped.pool {
				e.capped = nil
				keys = append(keys, key)
			}
		}
		l.line.each(func(w *waiter) bool {
			if w.reclaiming {
				w.reclaiming = false
				if l.line.unpromise(w) {
					woken = append(woken, w.Holder)
				}
			}
			return true
		})
	}
	l.changedLocked()
	wakeWaiters := make([]func(types.NamespacedName), len(woken))
	for i, h := range woken {
		wakeWaiters[i] = l.books.classes[h.Class].Wake
	}
	wake := l.wakeLocked()
	victims := l.wakeKeys(keys)
	hook := l.takeReclaimsLocked()
	decided := func() {}
	if !on { // turned on, every waiter is woken above
		decided = l.decidedWakesLocked()
	}
	defer decided()
	l.unlock()
	for i, h := range woken {
		if wakeWaiters[i] != nil {
			wakeWaiters[i](h.Key)
		}
	}
	wake()
	victims()
	hook()
}

// Preemption reports whether Options.Preemption is on.
func (l *Ledger) Preemption() bool {
	l.lock()
	defer l.unlock()
	return l.opts.Preemption
}

// SetConsumerLimits replaces the budget's consumer limit (Options.
// ConsumerLimit; nil limits no consumer) and every consumer's own limit
// (SetConsumerLimit's overrides) at once. Each consumer whose limit in
// force changed is brought within it as SetConsumerLimit does: shrunk,
// newest first, by what it holds beyond it, or its earlier caps lifted.
// It refuses an empty consumer and negative quantities, and then changes
// nothing.
func (l *Ledger) SetConsumerLimits(limit corev1.ResourceList, overrides map[string]corev1.ResourceList) error {
	if err := checkQuantities("consumer limit", limit); err != nil {
		return fmt.Errorf("budget %q: %w", l.name, err)
	}
	for _, c := range slices.Sorted(maps.Keys(overrides)) {
		if c == "" {
			return fmt.Errorf("budget %q: consumer limit for an empty consumer: name the consumer's cluster ID", l.name)
		}
		if err := checkQuantities(fmt.Sprintf("consumer limit of %q", c), overrides[c]); err != nil {
			return fmt.Errorf("budget %q: %w", l.name, err)
		}
	}
	next := make(map[string]corev1.ResourceList, len(overrides))
	for c, lim := range overrides {
		if len(lim) > 0 {
			next[c] = lim.DeepCopy()
		}
	}
	l.lock()
	// The consumers whose limit in force may change: those the ledger
	// knows, and those named by an override before or after.
	consumers := map[string]bool{}
	for c := range l.books.byConsumer {
		consumers[c] = true
	}
	for c := range l.line.consumers {
		consumers[c] = true
	}
	for _, e := range l.books.slices {
		consumers[e.consumer] = true
	}
	for c := range l.limits {
		consumers[c] = true
	}
	for c := range next {
		consumers[c] = true
	}
	before := make(map[string]corev1.ResourceList, len(consumers))
	for c := range consumers {
		before[c] = l.limitLocked(c)
	}
	l.opts.ConsumerLimit = limit.DeepCopy()
	l.limits = next
	var victims []types.NamespacedName
	shrunk := map[string]int{}
	for _, c := range slices.Sorted(maps.Keys(consumers)) {
		if limitsEqual(before[c], l.limitLocked(c)) {
			continue
		}
		v, _, n := l.fitConsumerLocked(c)
		victims = append(victims, v...)
		if n > 0 {
			shrunk[c] = n
		}
	}
	rechecked, waiters := l.recheckReclaimsLocked()
	l.changedLocked()
	wake := l.wakeLocked()
	wakeVictims := l.wakeKeys(append(victims, rechecked...))
	wakeWaiters := l.wakeHolders(waiters)
	hook := l.takeReclaimsLocked()
	log := l.log
	l.unlock()
	if len(shrunk) > 0 {
		parts := make([]string, 0, len(shrunk))
		for _, c := range slices.Sorted(maps.Keys(shrunk)) {
			parts = append(parts, fmt.Sprintf("%s: %d", c, shrunk[c]))
		}
		log.Info("consumer limits set: slices shrunk", "shrunk", strings.Join(parts, ", "))
	}
	wake()
	wakeVictims()
	wakeWaiters()
	hook()
	return nil
}

// limitsEqual compares two limits by value, nil and empty alike.
func limitsEqual(a, b corev1.ResourceList) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return equalLists(a, b)
}

// FollowEvictionAfter readies the ledger for an EvictionAfter set at run
// time (SetEvictionAfter): MayEvict reports true from now on, so that the
// feed built for it is ready to evict, whatever EvictionAfter is when it
// is built.
func (l *Ledger) FollowEvictionAfter() {
	l.lock()
	defer l.unlock()
	l.evictLive = true
}

// MayEvict reports whether the ledger may name pods to evict: it has an
// EvictionAfter, or follows one set at run time.
func (l *Ledger) MayEvict() bool {
	l.lock()
	defer l.unlock()
	return l.evictLive || l.opts.EvictionAfter > 0
}

// SetEvictionAfter sets Options.EvictionAfter: from now on EvictionsDue
// names the pods of slices shrunk at least d ago; d ≤ 0 evicts nothing.
func (l *Ledger) SetEvictionAfter(d time.Duration) {
	l.lock()
	defer l.unlock()
	l.opts.EvictionAfter = max(d, 0)
}
