package ledger

import (
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
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

// entry is what the ledger knows of one slice.
type entry struct {
	seen     bool // the slice itself was observed (not only its Quota)
	uid      types.UID
	rv       string
	class    string
	consumer string
	labels   map[string]string
	// grant is the last Accepted status.resources observed: a later Deny
	// does not take it back (Liqo's Quota and virtual node stay), a later
	// acceptance of less does.
	grant corev1.ResourceList
	// reclaimed is set while its last acceptance was a reclaim's shrink
	// (reason Reclaimed): its growth is then measured from its offer, not
	// from what its pods or a Quota not yet lowered still hold (see
	// growsFromLocked).
	reclaimed bool
	// quotas are Liqo's Quotas owned by the slice, by name, with the UID
	// of the slice that owns them.
	quotas map[string]quota
	// attempts are admissions whose writes the watch has not settled.
	attempts []*Attempt
	member   bool
	// frozen caps what a slice that left the budget's classes still
	// counts: what it held when it left.
	frozen corev1.ResourceList
	// counted is what the entry adds to the ledger's sum.
	counted corev1.ResourceList
	// inUse is what the running ShadowPods of its Quotas' users are
	// charged (see inuse.go).
	inUse corev1.ResourceList
	// created is the slice's creation time: among victims of equal
	// priority and share, the newest yields first.
	created time.Time
	// capped is set while the slice yields capacity to a waiter of higher
	// priority (see reclaim.go).
	capped *capped
	// overSeen is what its pods used beyond its grant when its class was
	// last woken for that.
	overSeen corev1.ResourceList
	// accepted: its Resources condition was Accepted when last observed.
	accepted bool
	// initial: observed before the books were counted (the feed's
	// initial lists); decided: its class decided it since (see
	// undecided.go).
	initial, decided bool
}

type quota struct {
	owner     types.UID
	resources corev1.ResourceList
	// user is the Quota's spec.user: the identity whose ShadowPods it
	// limits.
	user string
}

// owns reports whether q is the slice's own Quota, not one left by a
// deleted slice of the same name (known when both UIDs are).
func (e *entry) owns(q quota) bool {
	return e.uid == "" || q.owner == "" || q.owner == e.uid
}

// users yields, once each, the users of the slice's own Quotas: the
// identities whose ShadowPods charge it.
func (e *entry) users(yield func(string) bool) {
	seen := map[string]bool{}
	for _, q := range e.quotas {
		if q.user == "" || seen[q.user] || !e.owns(q) {
			continue
		}
		seen[q.user] = true
		if !yield(q.user) {
			return
		}
	}
}

// held is what the cluster shows the slice holds: the largest of its
// grant, its own Quotas and what its consumer's running pods use, per
// resource.
func (e *entry) held() corev1.ResourceList {
	out := e.grant
	for _, q := range e.quotas {
		if e.owns(q) {
			out = maxList(out, q.resources)
		}
	}
	return maxList(out, e.inUse)
}

// offered is the slice's offer as the cluster shows it and as its writes
// in flight assume: what it was granted, without its Quotas (which follow
// the offer late) or what its pods use.
func (e *entry) offered() corev1.ResourceList {
	out := e.grant
	for _, a := range e.attempts {
		out = maxList(out, a.offer)
	}
	return out
}

// count is what the entry counts now.
func (e *entry) count() corev1.ResourceList {
	var out corev1.ResourceList
	switch {
	case !e.seen:
	case e.member:
		out = e.held()
	case e.frozen != nil:
		out = minList(e.held(), e.frozen)
	}
	for _, a := range e.attempts {
		out = maxList(out, a.offer)
	}
	return out
}

// idle reports whether the entry can be forgotten: it counts nothing and
// can count nothing until another observation.
func (e *entry) idle() bool {
	return !e.member && len(e.attempts) == 0 && len(e.grant) == 0 && len(e.quotas) == 0
}

// ObserveSlice records what the cluster shows of a slice.
func (l *Ledger) ObserveSlice(s Slice) {
	l.mu.Lock()
	if _, gone := l.gone[s.UID]; gone && s.UID != "" {
		l.mu.Unlock() // a read from before the deletion
		return
	}
	e := l.slices[s.Key]
	if e == nil {
		if !l.selects(s.Class, s.Labels) && (!s.Accepted || len(s.Grant) == 0) {
			l.mu.Unlock() // nothing to count, now or when its class attaches
			return
		}
		e = &entry{}
		l.slices[s.Key] = e
	}
	if e.seen && !newer(s.RV, e.rv) {
		// Already seen, or older than what was seen: a reconciler observed
		// the slice from its cache before the watch delivered this (or the
		// reverse). Most observations end here, before any copy.
		l.mu.Unlock()
		return
	}
	before := l.usedLocked()
	if e.uid != "" && e.uid != s.UID {
		// Deleted and created again under the same name, with no deletion
		// seen in between (a watch cut): a new slice, which may already
		// have a Quota of its own.
		quotas := e.quotas
		l.bury(e.uid)
		l.dropLocked(s.Key, e)
		e = l.newEntryLocked(s.Key, s.Consumer, othersQuotas(quotas, e.uid))
	}
	prev := e.held() // what it held as a member, if it is leaving now
	movedConsumer := e.consumer != s.Consumer && e.counted != nil
	if e.consumer != s.Consumer {
		l.account(e, nil) // recounted below, as the new consumer's
		e.consumer = s.Consumer
	}
	e.seen, e.uid, e.class, e.labels, e.rv, e.created = true, s.UID, s.Class, s.Labels, s.RV, s.Created
	if s.Accepted {
		e.grant = s.Grant.DeepCopy()
		e.reclaimed = s.Reclaimed
	}
	e.accepted = s.Accepted
	if !l.counted {
		e.initial = true
	}
	e.settle(s.RV)
	l.recountFrom(s.Key, e, prev)
	wake := l.wakeIfFreedLocked(before)
	if l.trackLocked(s.Key, l.slices[s.Key]) {
		wake = l.wakeLocked()
	}
	if movedConsumer && (len(l.opts.ConsumerLimit) > 0 || len(l.limits) > 0) {
		wake = l.wakeLocked() // the old consumer's holding dropped
	}
	over := l.takeWakesLocked()
	l.mu.Unlock()
	wake()
	over()
}

// ForgetSlice records that the slice key with UID uid is gone: it holds
// nothing any more. An empty uid forgets whatever slice has that name; a
// uid other than the one observed forgets nothing but that UID (the slice
// was created again under the same name, and the new one was seen first).
func (l *Ledger) ForgetSlice(key types.NamespacedName, uid types.UID) {
	l.mu.Lock()
	e := l.slices[key]
	if e != nil && uid != "" && e.uid != "" && e.uid != uid {
		l.bury(uid)
		l.mu.Unlock()
		return
	}
	promised := l.line.removeKey(key)
	uncapped := l.wakeKeys(l.uncapKeyLocked(key))
	defer uncapped()
	if e == nil && !promised {
		l.bury(uid)
		l.mu.Unlock()
		return
	}
	before := l.usedLocked()
	if e != nil {
		if uid == "" {
			uid = e.uid
		}
		l.bury(uid)
		quotas := othersQuotas(e.quotas, uid)
		l.dropLocked(key, e)
		if len(quotas) > 0 { // a Quota of a newer slice of that name, seen first
			l.newEntryLocked(key, "", quotas)
		}
	}
	wake := l.wakeIfFreedLocked(before)
	if promised || l.trackLocked(key, l.slices[key]) {
		wake = l.wakeLocked()
	}
	l.mu.Unlock()
	wake()
}

// ForgetAll forgets every observation and assumption: the feed that told
// the ledger what the cluster shows stopped, and the next one rebuilds it
// from its initial list (a deletion between the two would otherwise never
// be told). The waiting line is kept. Until Counted is called with the
// epoch it starts, the books are empty, not free: AdmitAll and CheckAll
// refuse every request with ReasonNotCounted (a decision still in flight
// when its manager stopped would otherwise be admitted against nothing).
func (l *Ledger) ForgetAll() {
	l.mu.Lock()
	l.epoch++
	l.uncounted = true
	l.counted = false
	for key, e := range l.slices {
		l.dropLocked(key, e)
	}
	clear(l.pods)
	clear(l.users)
	clear(l.victims)
	clear(l.evicting)
	l.undecided = newUndecided()
	l.pendingWakes = nil
	l.mu.Unlock()
}

// Epoch is the ledger's count of ForgetAll calls: a feed started now
// passes it to Counted once it has delivered its initial lists.
func (l *Ledger) Epoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// Counted records that a feed started at epoch has delivered its initial
// lists: the books count the cluster again, and the ledger admits. A feed
// of an older epoch (stopped, its books forgotten since) counts nothing.
func (l *Ledger) Counted(epoch uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch == l.epoch {
		l.uncounted = false
		l.counted = true
	}
}

// othersQuotas are the quotas not owned by uid.
func othersQuotas(quotas map[string]quota, uid types.UID) map[string]quota {
	var out map[string]quota
	for n, q := range quotas {
		if q.owner != "" && q.owner != uid {
			if out == nil {
				out = map[string]quota{}
			}
			out[n] = q
		}
	}
	return out
}

// Ahead reports whether the ledger has observed the slice key (with uid)
// at a version newer than rv: a cache showing rv is behind, and deciding
// from it would decide twice.
func (l *Ledger) Ahead(key types.NamespacedName, uid types.UID, rv string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.slices[key]
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

// tombstoneTTL is how long a deleted slice's UID is remembered, so that a
// reconciler's read from before the deletion cannot bring it back.
const tombstoneTTL = time.Minute

// bury remembers a deleted slice's UID for tombstoneTTL.
func (l *Ledger) bury(uid types.UID) {
	if uid == "" {
		return
	}
	now := time.Now()
	if len(l.gone) >= l.goneNext { // amortised: the next scan waits until the map doubles
		for u, at := range l.gone {
			if now.Sub(at) > tombstoneTTL {
				delete(l.gone, u)
			}
		}
		l.goneNext = max(64, 2*len(l.gone))
	}
	l.gone[uid] = now
}

// ObserveQuota records Liqo's Quota name, owned by the slice key (whose
// UID is owner), enforcing resources for user (its spec.user, whose
// running ShadowPods the slice then holds as well).
func (l *Ledger) ObserveQuota(key types.NamespacedName, owner types.UID, name, user string, resources corev1.ResourceList) {
	l.mu.Lock()
	e := l.slices[key]
	if e == nil {
		e = &entry{}
		l.slices[key] = e
	}
	before := l.usedLocked()
	if e.quotas == nil {
		e.quotas = map[string]quota{}
	}
	if old, ok := e.quotas[name]; ok && old.user != user {
		l.unlinkUser(old.user, key)
	}
	e.quotas[name] = quota{owner: owner, resources: resources.DeepCopy(), user: user}
	l.linkUser(user, key)
	e.inUse = l.inUseOf(e)
	l.recount(key, e)
	wake := l.wakeIfFreedLocked(before)
	over := l.takeWakesLocked()
	l.mu.Unlock()
	wake()
	over()
}

// ForgetQuota records that a Quota owned by key is gone.
func (l *Ledger) ForgetQuota(key types.NamespacedName, name string) {
	l.mu.Lock()
	e := l.slices[key]
	if e == nil {
		l.mu.Unlock()
		return
	}
	before := l.usedLocked()
	if q, ok := e.quotas[name]; ok {
		l.unlinkUser(q.user, key)
	}
	delete(e.quotas, name)
	e.inUse = l.inUseOf(e)
	l.recount(key, e)
	wake := l.wakeIfFreedLocked(before)
	over := l.takeWakesLocked()
	l.mu.Unlock()
	wake()
	over()
}

// selects reports whether a slice of class with labels is served by an
// attached class.
func (l *Ledger) selects(class string, lbls map[string]string) bool {
	c, ok := l.classes[class]
	return ok && (c.Selector == nil || c.Selector.Matches(labels.Set(lbls)))
}

// recount brings e's membership and what it counts up to date, and forgets
// it when it counts nothing and can count nothing.
func (l *Ledger) recount(key types.NamespacedName, e *entry) {
	l.recountFrom(key, e, e.held())
}

// recountFrom is recount for an entry that held prev before the change
// being recorded: a slice leaving the budget's classes is capped at what it
// held as a member, and the cap only ever falls (once another class has
// lowered its grant, raising it again is that class's business).
func (l *Ledger) recountFrom(key types.NamespacedName, e *entry, prev corev1.ResourceList) {
	member := e.seen && l.selects(e.class, e.labels)
	switch {
	case member:
		e.frozen = nil
	case e.member:
		e.frozen = minList(prev, e.held())
	case e.frozen != nil:
		e.frozen = minList(e.frozen, e.held())
	}
	e.member = member
	l.account(e, e.count())
	if len(e.inUse) > 0 || len(e.overSeen) > 0 {
		l.noteOverLocked(key, e)
	}
	if e.idle() && len(e.counted) == 0 {
		delete(l.slices, key)
	}
}

// account replaces what e adds to the sum (and to its consumer's) with
// counted.
func (l *Ledger) account(e *entry, counted corev1.ResourceList) {
	if len(e.counted) > 0 || len(counted) > 0 {
		l.changedLocked()
	}
	mine := l.byConsumer[e.consumer]
	for n, q := range e.counted {
		sub(l.sum, n, q)
		sub(mine, n, q)
	}
	e.counted = counted
	if len(counted) > 0 && mine == nil {
		mine = corev1.ResourceList{}
		l.byConsumer[e.consumer] = mine
	}
	empty := true
	for n, q := range counted {
		add(l.sum, n, q)
		add(mine, n, q)
	}
	for _, q := range mine {
		if !q.IsZero() {
			empty = false
			break
		}
	}
	if empty {
		delete(l.byConsumer, e.consumer)
	}
}

func add(rl corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) {
	v := rl[n]
	v.Add(q)
	rl[n] = v
}

func sub(rl corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) {
	if rl == nil {
		return
	}
	v := rl[n]
	v.Sub(q)
	rl[n] = v
}

// dropLocked forgets e: what it counted and its unsettled attempts.
func (l *Ledger) dropLocked(key types.NamespacedName, e *entry) {
	for _, a := range e.attempts {
		a.dropped = true
	}
	e.attempts = nil
	for _, q := range e.quotas {
		l.unlinkUser(q.user, key)
	}
	l.account(e, nil)
	delete(l.slices, key)
}

// newEntryLocked makes the entry of key holding quotas (a newer slice's
// of that name, seen before the slice itself).
func (l *Ledger) newEntryLocked(key types.NamespacedName, consumer string, quotas map[string]quota) *entry {
	e := &entry{consumer: consumer, quotas: quotas}
	for _, q := range quotas {
		l.linkUser(q.user, key)
	}
	e.inUse = l.inUseOf(e)
	l.slices[key] = e
	return e
}

// maxList is the per-resource maximum of a and b.
func maxList(a, b corev1.ResourceList) corev1.ResourceList {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make(corev1.ResourceList, len(a)+len(b))
	for n, q := range a {
		out[n] = q
	}
	for n, q := range b {
		if c, ok := out[n]; !ok || q.Cmp(c) > 0 {
			out[n] = q
		}
	}
	return out
}

// minList is the per-resource minimum of a and b, over the resources both
// name.
func minList(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range a {
		if c, ok := b[n]; ok {
			if c.Cmp(q) < 0 {
				q = c
			}
			out[n] = q
		}
	}
	return out
}

// newer reports whether resourceVersion a is newer than b. Kubernetes
// resourceVersions are comparable integers (KEP-5504); for any other form,
// a different version counts as newer.
func newer(a, b string) bool {
	if b == "" {
		return a != ""
	}
	c, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return a != b
	}
	return c > 0
}
