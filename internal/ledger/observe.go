package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Slice is what the ledger reads of one ResourceSlice, as the watch (or a
// read) shows it.
type Slice struct {
	Key types.NamespacedName
	UID types.UID
	// RV is the resourceVersion observed.
	RV string
	// Class is the slice's effective class.
	Class string
	// Consumer is the slice's trusted consumer (its namespace's
	// liqo.io/remote-cluster-id, or the namespace): consumer limits and
	// fair order key on it.
	Consumer string
	Labels   map[string]string
	// Accepted reports whether the Resources condition is Accepted; Grant
	// is then status.resources.
	Accepted bool
	Grant    corev1.ResourceList
	// Reclaimed reports whether it was Accepted with reason
	// ReasonReclaimed: shrunk for a reclaim (see reclaim.go).
	Reclaimed bool
	// Created is the slice's creation time.
	Created time.Time
}

// ObserveSlice records what the cluster shows of a slice.
func (l *Ledger) ObserveSlice(s Slice) {
	l.lock()
	e := l.books.fresh(s)
	if e == nil {
		l.unlock()
		return
	}
	before := l.books.used()
	movedConsumer := l.books.observe(e, s)
	wake := l.wakeIfFreedLocked(before)
	if l.books.track(s.Key, l.books.slices[s.Key], l.line.has) {
		wake = l.wakeLocked()
	}
	if movedConsumer && (len(l.opts.ConsumerLimit) > 0 || len(l.limits) > 0) {
		wake = l.wakeLocked() // the old consumer's holding dropped
	}
	over := l.books.takeWakes()
	l.unlock()
	wake()
	over()
}

// ForgetSlice records that the slice key with UID uid is gone: it holds
// nothing any more. An empty uid forgets whatever slice has that name; a
// uid other than the one observed forgets nothing but that UID (the slice
// was created again under the same name, and the new one was seen first).
func (l *Ledger) ForgetSlice(key types.NamespacedName, uid types.UID) {
	l.lock()
	wakes := []func(){l.forgetSliceLocked(key, uid)}
	// A member of l's cohort whose last class stopped keeps its books
	// (ForgetAll) but has no feed to tell it of its slices' deletions:
	// what l's feed tells is the cluster's, for the cohort's one manager,
	// so its books drop the slice too (issue 50, scenario 2), and what it
	// held is free for the cohort again.
	for _, m := range l.others() {
		if m.stale {
			wakes = append(wakes, m.forgetSliceLocked(key, uid))
		}
	}
	l.unlock()
	for _, w := range wakes {
		w()
	}
}

// forgetSliceLocked is ForgetSlice in l's books; the caller holds l's
// lock and calls what it returns without it.
func (l *Ledger) forgetSliceLocked(key types.NamespacedName, uid types.UID) func() {
	e := l.books.slices[key]
	if e != nil && uid != "" && e.uid != "" && e.uid != uid {
		l.books.bury(uid)
		return func() {}
	}
	// The caps made for its waiters are lifted while they are still in
	// line (uncapKeyLocked finds the cohort's by the line; issue 50,
	// scenario 4).
	uncapped := l.wakeKeys(l.uncapKeyLocked(key))
	promised := l.line.removeKey(key)
	before := l.books.used()
	l.books.forgetSlice(key, uid)
	if e == nil && !promised {
		return uncapped
	}
	wake := l.wakeIfFreedLocked(before)
	if promised || l.books.track(key, l.books.slices[key], l.line.has) {
		wake = l.wakeLocked()
	}
	return func() {
		wake()
		uncapped()
	}
}

// ForgetAll forgets every observation and assumption: the feed that told
// the ledger what the cluster shows stopped, and the next one rebuilds it
// from its initial list (a deletion between the two would otherwise never
// be told). The waiting line is kept. Until Counted is called with the
// epoch it starts, the books are empty, not free: AdmitAll and CheckAll
// refuse every request with ReasonNotCounted (a decision still in flight
// when its manager stopped would otherwise be admitted against nothing).
// A cohort member with no class attached (its last class stopped) keeps
// its books instead, until a class draws from it again (Attach): its
// slices still hold what Liqo enforces, and its cohort goes on counting
// them.
func (l *Ledger) ForgetAll() {
	l.lock()
	l.epoch++
	if l.cohort != nil && len(l.books.classes) == 0 {
		// Its last class stopped: its slices still hold what Liqo
		// enforces, and its cohort must go on counting them (issue 50,
		// scenario 2). The books are kept as they stand, though no feed
		// tells of them any more, and forgotten when a class draws from
		// the ledger again (Attach), before its new feed counts it.
		l.stale = true
		l.unlock()
		return
	}
	l.uncounted = true
	l.books.reset()
	clear(l.victims)
	clear(l.evicting)
	l.unlock()
}

// Epoch is the ledger's count of ForgetAll calls: a feed started now
// passes it to Counted once it has delivered its initial lists.
func (l *Ledger) Epoch() uint64 {
	l.lock()
	defer l.unlock()
	return l.epoch
}

// Counting records that a feed made at epoch (Epoch) will count the
// cluster for l. Until it has (Counted), l's books are empty, not free:
// l refuses with ReasonNotCounted, and so does every member of its cohort,
// which would otherwise lend what l's slices hold. A new leader's budgets
// start so: a member decided before its cohort's other feeds synced saw
// them hold nothing, and grew into what their waiters were promised. A
// ledger a feed of epoch counted already stays counted.
func (l *Ledger) Counting(epoch uint64) {
	l.lock()
	defer l.unlock()
	if epoch == l.epoch && !l.books.counted {
		l.uncounted = true
	}
}

// Counted records that a feed started at epoch has delivered its initial
// lists: the books count the cluster again, and the ledger admits. A feed
// of an older epoch (stopped, its books forgotten since) counts nothing.
func (l *Ledger) Counted(epoch uint64) {
	l.lock()
	defer l.unlock()
	if epoch == l.epoch {
		l.uncounted = false
		l.books.counted = true
	}
}

// Ahead reports whether the ledger has observed the slice key (with uid)
// at a version newer than rv: a cache showing rv is behind, and deciding
// from it would decide twice.
func (l *Ledger) Ahead(key types.NamespacedName, uid types.UID, rv string) bool {
	l.lock()
	defer l.unlock()
	e := l.books.slices[key]
	if e == nil || (e.uid != "" && e.uid != uid) {
		return false
	}
	if e.seen && newer(e.rv, rv) {
		return true
	}
	// A write decided from rv was applied: the cache showing rv has not
	// seen it yet, whether or not the watch has.
	for _, a := range e.attempts {
		if a.done && a.outcome == Applied && a.base == rv {
			return true
		}
	}
	return false
}

// ObserveQuota records Liqo's Quota name, owned by the slice key (whose
// UID is owner), enforcing resources for user (its spec.user, whose
// running ShadowPods the slice then holds as well).
func (l *Ledger) ObserveQuota(key types.NamespacedName, owner types.UID, name, user string, resources corev1.ResourceList) {
	l.record(func() {
		l.books.observeQuota(key, quota{owner: owner, resources: resources.DeepCopy(), user: user}, name)
	})
}

// ForgetQuota records that a Quota owned by key is gone.
func (l *Ledger) ForgetQuota(key types.NamespacedName, name string) {
	l.record(func() { l.books.forgetQuota(key, name) })
}

// record makes change to the books under the lock, then wakes the
// waiters if it freed capacity, and the classes of slices whose pods' use
// beyond their grant it changed.
func (l *Ledger) record(change func()) {
	l.lock()
	before := l.books.used()
	change()
	wake := l.wakeIfFreedLocked(before)
	over := l.books.takeWakes()
	l.unlock()
	wake()
	over()
}
