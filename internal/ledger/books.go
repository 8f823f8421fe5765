package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// books are what the cluster shows the budget holds, the way Kueue's
// cache counts admitted workloads: each slice's entry (its grant, its
// Quotas, what its running pods use), the sums by budget and by consumer,
// the attempts assumed before their writes (assume, then confirm by an
// observation or forget), the tombstones of deleted slices and the
// undecided slices of a new leader. They change only by what they are
// told (an observation, an assumption, a forgetting) and decide nothing:
// the Ledger reads them, under its lock, to admit and to plan reclaims.
type books struct {
	// names are the resources the budget limits; total its capacity,
	// naming exactly those.
	names []corev1.ResourceName
	total corev1.ResourceList
	// slices is what the cluster shows of each slice that holds something
	// here, or may (served by an attached class).
	slices map[types.NamespacedName]*entry
	// sum is what every entry counts, kept up to date on each change so an
	// admission costs O(resources), not O(slices).
	sum corev1.ResourceList
	// byConsumer is what each consumer's slices count, for consumer
	// limits and fair order.
	byConsumer map[string]corev1.ResourceList
	// classes are the attached classes: a slice one of them selects is a
	// member, and counts all it holds.
	classes map[string]Class
	// gone remembers recently deleted slices (see bury).
	gone     map[types.UID]time.Time
	goneNext int
	// pods and users are what the consumers' running ShadowPods use (see
	// inuse.go).
	pods  map[types.NamespacedName]pod
	users map[string]*userUse
	// podIndex, when set, lists a user's running pods: the books then
	// keep only the pods of users named by the Quotas of slices whose
	// pods matter (see SetPodIndex).
	podIndex *podIndexBox
	// pendingWakes are the over-grant wakes noted under the lock (see
	// noteOver), taken by takeWakes.
	pendingWakes []wakeOf
	// counted: a feed of this epoch has delivered its initial lists
	// (Counted); slices observed before are initial (see undecided.go).
	counted bool
	// undecided are the slices not yet decided by their class since the
	// books were counted, by priority (see undecided.go).
	undecided undecided
	// changed is told of each change of what the books count (the
	// Ledger refreshes its waiters' messages).
	changed func()
	meter   *meterHook // what each consumer holds, told as it changes (meter.go)
}

func newBooks(names []corev1.ResourceName, total corev1.ResourceList, changed func()) books {
	return books{
		names:      names,
		total:      total,
		slices:     map[types.NamespacedName]*entry{},
		sum:        corev1.ResourceList{},
		byConsumer: map[string]corev1.ResourceList{},
		classes:    map[string]Class{},
		gone:       map[types.UID]time.Time{},
		pods:       map[types.NamespacedName]pod{},
		users:      map[string]*userUse{},
		undecided:  newUndecided(),
		changed:    changed,
	}
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
	// growsFrom).
	reclaimed bool
	// givenBack: the waiter it was shrunk for left, or can no longer fit,
	// and its cap was lifted: what it still counts is its own again (see
	// growsFrom), until it is capped again.
	givenBack bool
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

// names reports whether one of the slice's Quotas names user.
func (e *entry) names(user string) bool {
	for _, q := range e.quotas {
		if q.user == user {
			return true
		}
	}
	return false
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

// tombstoneTTL is how long a deleted slice's UID is remembered, so that a
// reconciler's read from before the deletion cannot bring it back.
const tombstoneTTL = time.Minute

// bury remembers a deleted slice's UID for tombstoneTTL.
func (b *books) bury(uid types.UID) {
	if uid == "" {
		return
	}
	now := time.Now()
	if len(b.gone) >= b.goneNext { // amortised: the next scan waits until the map doubles
		for u, at := range b.gone {
			if now.Sub(at) > tombstoneTTL {
				delete(b.gone, u)
			}
		}
		b.goneNext = max(64, 2*len(b.gone))
	}
	b.gone[uid] = now
}

// selects reports whether a slice of class with labels is served by an
// attached class.
func (b *books) selects(class string, lbls map[string]string) bool {
	c, ok := b.classes[class]
	return ok && (c.Selector == nil || c.Selector.Matches(labels.Set(lbls)))
}

// recountAll recomputes, after the attached classes changed, which slices
// are members and what each counts.
func (b *books) recountAll() {
	for key, e := range b.slices {
		b.recount(key, e)
	}
}

// recount brings e's membership and what it counts up to date, and forgets
// it when it counts nothing and can count nothing.
func (b *books) recount(key types.NamespacedName, e *entry) {
	b.recountFrom(key, e, e.held(), e.keepsPods())
}

// recountFrom is recount for an entry that held prev before the change
// being recorded: a slice leaving the budget's classes is capped at what it
// held as a member, and the cap only ever falls (once another class has
// lowered its grant, raising it again is that class's business).
// keptPods is whether its pods mattered before the change (keepsPods).
func (b *books) recountFrom(key types.NamespacedName, e *entry, prev corev1.ResourceList, keptPods bool) {
	member := e.seen && b.selects(e.class, e.labels)
	switch {
	case member:
		e.frozen = nil
	case e.member:
		e.frozen = minList(prev, e.held())
	case e.frozen != nil:
		e.frozen = minList(e.frozen, e.held())
	}
	e.member = member
	if b.podIndex != nil && keptPods != e.keepsPods() {
		// Its pods start or stop mattering (seen, joined, left).
		for _, q := range e.quotas {
			b.syncPodsOf(q.user)
		}
	}
	b.account(e, e.count())
	if len(e.inUse) > 0 || len(e.overSeen) > 0 {
		b.noteOver(key, e)
	}
	if e.idle() && len(e.counted) == 0 {
		delete(b.slices, key)
	}
}

// account replaces what e adds to the sum (and to its consumer's) with
// counted.
func (b *books) account(e *entry, counted corev1.ResourceList) {
	if len(e.counted) > 0 || len(counted) > 0 {
		b.changed()
	}
	mine := b.byConsumer[e.consumer]
	for n, q := range e.counted {
		sub(b.sum, n, q)
		sub(mine, n, q)
	}
	e.counted = counted
	if len(counted) > 0 && mine == nil {
		mine = corev1.ResourceList{}
		b.byConsumer[e.consumer] = mine
	}
	empty := true
	for n, q := range counted {
		add(b.sum, n, q)
		add(mine, n, q)
	}
	for _, q := range mine {
		if !q.IsZero() {
			empty = false
			break
		}
	}
	if empty {
		delete(b.byConsumer, e.consumer)
	}
	b.meter.account(b, e)
}

// drop forgets e: what it counted and its unsettled attempts.
func (b *books) drop(key types.NamespacedName, e *entry) {
	for _, a := range e.attempts {
		a.dropped = true
	}
	e.attempts = nil
	for _, q := range e.quotas {
		b.unlinkUser(q.user, key)
	}
	b.account(e, nil)
	delete(b.slices, key)
}

// newEntry makes the entry of key holding quotas (a newer slice's
// of that name, seen before the slice itself).
func (b *books) newEntry(key types.NamespacedName, consumer string, quotas map[string]quota) *entry {
	e := &entry{consumer: consumer, quotas: quotas}
	for _, q := range quotas {
		b.linkUser(q.user, key)
	}
	e.inUse = b.inUseOf(e)
	b.slices[key] = e
	return e
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

// assume counts r's offer for its slice before the write (Kueue's
// assume): back is what the admission took down, put back if the write
// is not applied. A slice deleted while it was decided is assumed
// nothing: its write will find it gone, and the attempt is dropped.
func (b *books) assume(r Request, back *waitBack) *Attempt {
	if _, gone := b.gone[r.UID]; gone && r.UID != "" {
		return &Attempt{key: r.Key, base: r.Base, done: true, dropped: true}
	}
	e := b.slices[r.Key]
	if e == nil {
		e = &entry{consumer: r.Consumer}
		b.slices[r.Key] = e
	}
	a := &Attempt{key: r.Key, base: r.Base, offer: r.Offer.DeepCopy(), back: back}
	// Decided from a version older than one already observed: a write
	// from it cannot apply (optimistic locking), so the observation
	// covers it.
	a.superseded = e.seen && newer(e.rv, r.Base)
	e.attempts = append(e.attempts, a)
	b.recount(r.Key, e)
	return a
}

// forget drops the attempt a from its slice (Kueue's forget: its write
// was not applied); it reports whether the books counted it.
func (b *books) forget(a *Attempt) bool {
	a.dropped = true
	e := b.slices[a.key]
	if e == nil {
		return false
	}
	for i, x := range e.attempts {
		if x == a {
			e.attempts = append(e.attempts[:i], e.attempts[i+1:]...)
			break
		}
	}
	b.recount(a.key, e)
	return true
}

// used is what the slices count, per limited resource.
func (b *books) used() corev1.ResourceList {
	used := corev1.ResourceList{}
	for _, n := range b.names {
		used[n] = b.sum[n].DeepCopy()
	}
	return used
}

// free is total − used per limited resource; negative when the total
// shrank below what is held.
func (b *books) free() corev1.ResourceList {
	free := corev1.ResourceList{}
	for _, n := range b.names {
		f := b.total[n].DeepCopy()
		f.Sub(b.sum[n])
		free[n] = f
	}
	return free
}

// fresh is the entry to record the observation s in; nil when s is stale
// (a read from before the slice's deletion, a version already seen or
// older) or there is nothing to count, now or when its class attaches.
func (b *books) fresh(s Slice) *entry {
	if _, gone := b.gone[s.UID]; gone && s.UID != "" {
		return nil // a read from before the deletion
	}
	e := b.slices[s.Key]
	if e == nil {
		if !b.selects(s.Class, s.Labels) && (!s.Accepted || len(s.Grant) == 0) {
			return nil
		}
		e = &entry{}
		b.slices[s.Key] = e
	}
	if e.seen && !newer(s.RV, e.rv) {
		// Already seen, or older than what was seen: a reconciler observed
		// the slice from its cache before the watch delivered this (or the
		// reverse). Most observations end here, before any copy.
		return nil
	}
	return e
}

// observe records s in its entry e (fresh's) and confirms or drops the
// attempts it settles (Kueue's confirm). It reports whether the slice
// moved from a consumer that counted it to another.
func (b *books) observe(e *entry, s Slice) (movedConsumer bool) {
	if e.uid != "" && e.uid != s.UID {
		// Deleted and created again under the same name, with no deletion
		// seen in between (a watch cut): a new slice, which may already
		// have a Quota of its own.
		quotas := e.quotas
		b.bury(e.uid)
		b.drop(s.Key, e)
		e = b.newEntry(s.Key, s.Consumer, othersQuotas(quotas, e.uid))
	}
	prev := e.held() // what it held as a member, if it is leaving now
	movedConsumer = e.consumer != s.Consumer && e.counted != nil
	if e.consumer != s.Consumer {
		b.account(e, nil) // recounted below, as the new consumer's
		e.consumer = s.Consumer
	}
	keptPods := e.keepsPods() // before it is seen
	e.seen, e.uid, e.class, e.labels, e.rv, e.created = true, s.UID, s.Class, s.Labels, s.RV, s.Created
	if s.Accepted {
		e.grant = s.Grant.DeepCopy()
		e.reclaimed = s.Reclaimed
	}
	e.accepted = s.Accepted
	if !b.counted {
		e.initial = true
	}
	e.settle(s.RV)
	b.recountFrom(s.Key, e, prev, keptPods)
	return movedConsumer
}

// forgetSlice forgets the slice key, deleted: uid ("" for whatever slice
// has that name) is buried, and a Quota of a newer slice of that name,
// seen first, is kept.
func (b *books) forgetSlice(key types.NamespacedName, uid types.UID) {
	e := b.slices[key]
	if e == nil {
		b.bury(uid)
		return
	}
	if uid == "" {
		uid = e.uid
	}
	b.bury(uid)
	quotas := othersQuotas(e.quotas, uid)
	b.drop(key, e)
	if len(quotas) > 0 {
		b.newEntry(key, "", quotas)
	}
}

// observeQuota records the Quota name of the slice key.
func (b *books) observeQuota(key types.NamespacedName, q quota, name string) {
	e := b.slices[key]
	if e == nil {
		e = &entry{}
		b.slices[key] = e
	}
	if e.quotas == nil {
		e.quotas = map[string]quota{}
	}
	old, had := e.quotas[name]
	e.quotas[name] = q
	if had && old.user != q.user && !e.names(old.user) {
		b.unlinkUser(old.user, key)
	}
	b.linkUser(q.user, key)
	e.inUse = b.inUseOf(e)
	b.recount(key, e)
}

// forgetQuota forgets the Quota name of the slice key.
func (b *books) forgetQuota(key types.NamespacedName, name string) {
	e := b.slices[key]
	if e == nil {
		return
	}
	q, ok := e.quotas[name]
	delete(e.quotas, name)
	if ok && !e.names(q.user) {
		b.unlinkUser(q.user, key)
	}
	e.inUse = b.inUseOf(e)
	b.recount(key, e)
}

// reset forgets every observation and assumption (ForgetAll).
func (b *books) reset() {
	b.counted = false
	for key, e := range b.slices {
		b.drop(key, e)
	}
	clear(b.pods)
	clear(b.users)
	b.undecided = newUndecided()
	b.pendingWakes = nil
}

// growsFrom is what an offer for the slice key is measured from:
// what it counts now; for a slice shrunk by a reclaim (its condition says
// Reclaimed), the offer it was left with and its writes in flight. What
// its pods still use beyond that, and its Quota while Liqo has not yet
// lowered it to the smaller offer, are being taken back, not room for it
// to grow into: without this rule a victim whose cap is not known (a new
// leader, before the waiter it yielded to is decided again) would be
// granted its old offer back at once, undoing the reclaim. Once the
// ledger gave back what was taken for a waiter (givenBack), what the
// victim still counts is its own again: nothing is being taken back.
func (b *books) growsFrom(key types.NamespacedName) corev1.ResourceList {
	e := b.slices[key]
	switch {
	case e == nil:
		return nil
	case e.reclaimed && !e.givenBack:
		return e.offered()
	default:
		return e.counted
	}
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

// heldBack is how many slices of priority above p are undecided.
func (b *books) heldBack(p int32) int {
	n := 0
	for q, c := range b.undecided.count {
		if q > p {
			n += c
		}
	}
	return n
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

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if c, ok := b[n]; !ok || c.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// noteOver wakes the class of a slice whose pods now use a
// different amount beyond its grant, so that it says so (an OverGrant
// event); the wake is made by the caller after releasing the lock.
func (b *books) noteOver(key types.NamespacedName, e *entry) {
	over := overOf(e)
	if equalLists(over, e.overSeen) {
		return
	}
	e.overSeen = over
	if c, ok := b.classes[e.class]; ok && c.Wake != nil && len(over) > 0 {
		b.pendingWakes = append(b.pendingWakes, wakeOf{c.Wake, key})
	}
}

// overOf is what e's pods use beyond its grant, per resource (nil when
// nothing). A slice shrunk by a reclaim, or capped for one, is never over
// its grant: its running pods outlive the smaller grant by design (Liqo
// enforces a Quota on new pods only), and an over-grant means only that
// Liqo's enforcement let pods past a grant they were created under.
func overOf(e *entry) corev1.ResourceList {
	if e.reclaimed || e.capped != nil {
		return nil
	}
	var out corev1.ResourceList
	for n, use := range e.inUse {
		over := use.DeepCopy()
		over.Sub(e.grant[n])
		if over.Sign() > 0 {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[n] = over
		}
	}
	return out
}

// wakeOf is a wake owed after the lock is released.
type wakeOf struct {
	wake func(types.NamespacedName)
	key  types.NamespacedName
}

// takeWakes returns the wakes recorded under the lock, to call after
// releasing it.
func (b *books) takeWakes() func() {
	ws := b.pendingWakes
	b.pendingWakes = nil
	return func() {
		for _, w := range ws {
			w.wake(w.key)
		}
	}
}
