// Package ledger is the admission ledger behind budget.Budget: what each
// slice holds, what is reserved by writes in flight, and which slices wait
// for capacity. It is internal: users reach it through budget.Budget and
// resourceslice.WithBudget.
package ledger

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Holder names one slice as one class sees it. Keying by class as well as by
// slice keeps two controllers apart while a slice moves between classes that
// share a budget: until the old class releases, the slice counts twice, never
// zero times.
type Holder struct {
	Class string
	Key   types.NamespacedName
}

// holding is what one holder has: committed is what the API server has (our
// last successful write, or what the cache showed), pending what a write in
// flight would give it. Usage counts the larger of the two per resource, so
// a write in flight is covered whichever way it ends.
type holding struct {
	committed corev1.ResourceList
	pending   corev1.ResourceList
	inFlight  bool
	// writtenFrom is the resourceVersion our last write was computed from:
	// a cache still showing it has not seen that write.
	writtenFrom string
}

// waiter is a slice denied for lack of budget, waiting for capacity.
type waiter struct {
	Holder
	created time.Time
	offer   corev1.ResourceList
}

// Class is what the ledger needs from a class that draws from it.
type Class struct {
	// Wake enqueues a slice of the class for a new decision; it must not
	// block.
	Wake func(types.NamespacedName)
	// Seed lists what the class's Accepted slices hold, from a synced cache.
	Seed func() (map[types.NamespacedName]corev1.ResourceList, error)
	// Exists reports whether the slice is still in the cache. When the class
	// attaches again after Detach, seeding drops what a slice deleted in
	// between still held; nil keeps every such holding.
	Exists func(types.NamespacedName) bool
}

// Ledger is safe for concurrent use.
type Ledger struct {
	name string

	mu    sync.Mutex
	total corev1.ResourceList
	holds map[Holder]*holding
	// sum is what every holding contributes (the larger of committed and
	// pending), over all resources, kept up to date on each change so an
	// admission costs O(resources), not O(slices).
	sum     corev1.ResourceList
	waiting map[Holder]waiter
	classes map[string]Class
	seeded  map[string]bool
}

// New returns an empty ledger over total.
func New(name string, total corev1.ResourceList) (*Ledger, error) {
	if name == "" {
		return nil, errors.New("budget: empty name")
	}
	if err := checkTotal(total); err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	return &Ledger{
		name:    name,
		total:   total.DeepCopy(),
		holds:   map[Holder]*holding{},
		sum:     corev1.ResourceList{},
		waiting: map[Holder]waiter{},
		classes: map[string]Class{},
		seeded:  map[string]bool{},
	}, nil
}

func checkTotal(total corev1.ResourceList) error {
	var neg []string
	for n, q := range total {
		if q.Sign() < 0 {
			neg = append(neg, fmt.Sprintf("%s=%s", n, q.String()))
		}
	}
	if len(neg) > 0 {
		sort.Strings(neg)
		return fmt.Errorf("negative quantity in total: %s", strings.Join(neg, ", "))
	}
	return nil
}

// Name returns the budget's name.
func (l *Ledger) Name() string { return l.name }

// Total returns a copy of the capacity.
func (l *Ledger) Total() corev1.ResourceList {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total.DeepCopy()
}

// Used returns what holders have, writes in flight included, for the
// resources the budget limits.
func (l *Ledger) Used() corev1.ResourceList {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usedLocked()
}

// Free returns total − used per limited resource, never below zero.
func (l *Ledger) Free() corev1.ResourceList {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.freeLocked(l.usedLocked())
}

// SetTotal changes the capacity; growing it wakes waiting slices.
func (l *Ledger) SetTotal(total corev1.ResourceList) error {
	if err := checkTotal(total); err != nil {
		return fmt.Errorf("budget %q: %w", l.name, err)
	}
	l.mu.Lock()
	l.total = total.DeepCopy()
	wake := l.wakeLocked()
	l.mu.Unlock()
	wake()
	return nil
}

// Attach registers a class drawing from the ledger. It returns an error if
// the class is already attached.
func (l *Ledger) Attach(class string, c Class) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.classes[class]; ok {
		return fmt.Errorf("class %q already draws from budget %q", class, l.name)
	}
	l.classes[class] = c
	return nil
}

// Detach stops a class drawing from the ledger: its waiting slices are
// forgotten and it is woken no more. What its Accepted slices hold stays
// counted, because they still hold it in the cluster: releasing it would let
// other classes be admitted into capacity that is not free. When the class
// attaches again, seeding brings its holdings up to date (see
// EnsureSeeded); until then a slice of the class deleted in between is still
// counted, which under-commits rather than over-commits.
func (l *Ledger) Detach(class string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.classes, class)
	delete(l.seeded, class)
	for h := range l.waiting {
		if h.Class == class {
			delete(l.waiting, h)
		}
	}
}

// EnsureSeeded rebuilds, once per class, what every attached class's
// Accepted slices hold, before anything is admitted: a restarted controller
// (or a new leader) must count what its predecessor granted. The caller's
// cache must be synced.
func (l *Ledger) EnsureSeeded() error {
	l.mu.Lock()
	before := l.usedLocked()
	defer func() {
		wake := l.wakeIfFreedLocked(before) // a deleted slice's holding dropped
		l.mu.Unlock()
		wake()
	}()
	for class, c := range l.classes {
		if l.seeded[class] {
			continue
		}
		held, err := c.Seed()
		if err != nil {
			return fmt.Errorf("budget %q: rebuilding what class %q holds: %w", l.name, class, err)
		}
		// Holdings kept from before a Detach: our own writes are newer than
		// the cache may show, so a known holding is kept, unless its slice
		// is gone. A slice still in the cache is decided again by the class,
		// which settles its holding.
		for h, x := range l.holds {
			if h.Class != class || x.inFlight {
				continue
			}
			if _, accepted := held[h.Key]; !accepted && c.Exists != nil && !c.Exists(h.Key) {
				l.drop(h)
			}
		}
		for key, rl := range held {
			h := Holder{Class: class, Key: key}
			if _, known := l.holds[h]; known {
				continue
			}
			x := &holding{}
			l.holds[h] = x
			l.change(x, func() { x.committed = rl.DeepCopy() })
		}
		l.seeded[class] = true
	}
	return nil
}

// Lagging reports whether the cache's copy of h (at resourceVersion rv) has
// not yet seen our last write: deciding from it could count a stale state.
func (l *Ledger) Lagging(h Holder, rv string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	x := l.holds[h]
	return x != nil && x.writtenFrom != "" && x.writtenFrom == rv
}

// Admit records the decision about to be written for h. For an acceptance
// of offer it reserves the offer if it fits and no older waiting slice that
// fits is ahead of it (best-effort FIFO); otherwise the slice becomes a
// waiter and Admit returns false with a message naming what is short. A
// denial (accepted false) reserves nothing: the holding drops to zero once
// the write commits.
func (l *Ledger) Admit(h Holder, created time.Time, offer corev1.ResourceList, accepted bool) (bool, string) {
	l.mu.Lock()
	x := l.holds[h]
	if x == nil {
		x = &holding{}
		l.holds[h] = x
	}
	if !accepted {
		delete(l.waiting, h)
		l.change(x, func() { x.pending, x.inFlight = nil, true })
		l.mu.Unlock()
		return true, ""
	}
	short, ahead := l.fitLocked(h, x, created, offer)
	if len(short) == 0 {
		delete(l.waiting, h)
		l.change(x, func() { x.pending, x.inFlight = offer.DeepCopy(), true })
		l.mu.Unlock()
		return true, ""
	}
	l.waiting[h] = waiter{Holder: h, created: created, offer: offer.DeepCopy()}
	l.change(x, func() { x.pending, x.inFlight = nil, true })
	var wake func()
	if ahead > 0 {
		wake = l.wakeLocked()
	}
	l.mu.Unlock()
	if wake != nil {
		wake()
	}
	return false, l.message(short, ahead)
}

// Check answers what Admit would, without reserving anything or joining the
// waiters: a dry run consults the budget but does not charge it.
func (l *Ledger) Check(h Holder, created time.Time, offer corev1.ResourceList, accepted bool) (bool, string) {
	if !accepted {
		return true, ""
	}
	l.mu.Lock()
	x := l.holds[h]
	if x == nil {
		x = &holding{}
	}
	short, ahead := l.fitLocked(h, x, created, offer)
	l.mu.Unlock()
	if len(short) == 0 {
		return true, ""
	}
	return false, l.message(short, ahead)
}

// fitLocked lists what keeps offer from fitting for h: what is free once h's
// own holding is given back, minus what older waiting slices that fit are
// owed (best-effort FIFO). ahead counts those older slices.
func (l *Ledger) fitLocked(h Holder, x *holding, created time.Time, offer corev1.ResourceList) ([]string, int) {
	used := l.usedLocked()
	// What h holds now does not count against it; but an older waiter can
	// only be owed what is really free, not h's own holding.
	mine := maxList(x.committed, x.pending, x.inFlight)
	free := l.freeExcluding(used, mine)
	really := l.freeExcluding(used, nil)
	ahead := 0
	for _, w := range l.orderedWaiters() {
		if w.Holder == h || !older(w, h, created) {
			continue
		}
		if fits(w.offer, really, nil) {
			subtract(really, w.offer)
			subtract(free, w.offer)
			ahead++
		}
	}
	return shortfall(offer, free, mine), ahead
}

func (l *Ledger) message(short []string, ahead int) string {
	msg := "budget " + l.name + ": " + strings.Join(short, "; ")
	if ahead > 0 {
		msg += fmt.Sprintf(" (free capacity is held for %d older waiting slice(s))", ahead)
	}
	return msg
}

// Commit records that the write Admit prepared for h succeeded (or that
// none was needed because the server already had it); from is the
// resourceVersion it was computed from ("" when nothing was written).
func (l *Ledger) Commit(h Holder, from string) {
	l.mu.Lock()
	x := l.holds[h]
	if x == nil || !x.inFlight {
		l.mu.Unlock()
		return
	}
	before := l.usedLocked()
	l.change(x, func() { x.committed, x.pending, x.inFlight, x.writtenFrom = x.pending, nil, false, from })
	if len(x.committed) == 0 && from == "" {
		l.drop(h)
	}
	wake := l.wakeIfFreedLocked(before)
	l.mu.Unlock()
	wake()
}

// Rollback records that the write Admit prepared for h was refused (a
// conflict, an invalid status): h keeps what it had.
func (l *Ledger) Rollback(h Holder) {
	l.mu.Lock()
	x := l.holds[h]
	if x == nil || !x.inFlight {
		l.mu.Unlock()
		return
	}
	before := l.usedLocked()
	l.change(x, func() { x.pending, x.inFlight = nil, false })
	if len(x.committed) == 0 && x.writtenFrom == "" {
		l.drop(h)
	}
	wake := l.wakeIfFreedLocked(before)
	l.mu.Unlock()
	wake()
}

// Release drops everything h holds or waits for: its slice is gone, being
// deleted, or no longer served by h's class.
func (l *Ledger) Release(h Holder) {
	l.mu.Lock()
	_, held := l.holds[h]
	_, waits := l.waiting[h]
	if !held && !waits {
		l.mu.Unlock()
		return
	}
	before := l.usedLocked()
	l.drop(h)
	delete(l.waiting, h)
	wake := l.wakeIfFreedLocked(before)
	l.mu.Unlock()
	wake()
}

// Waiting returns the holders waiting for capacity, oldest first.
func (l *Ledger) Waiting() []Holder {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Holder
	for _, w := range l.orderedWaiters() {
		out = append(out, w.Holder)
	}
	return out
}

func (l *Ledger) usedLocked() corev1.ResourceList {
	used := corev1.ResourceList{}
	for n := range l.total {
		used[n] = l.sum[n].DeepCopy()
	}
	return used
}

// change applies mutate to x, keeping sum equal to what every holding
// contributes.
func (l *Ledger) change(x *holding, mutate func()) {
	for n, q := range maxList(x.committed, x.pending, x.inFlight) {
		v := l.sum[n]
		v.Sub(q)
		l.sum[n] = v
	}
	mutate()
	for n, q := range maxList(x.committed, x.pending, x.inFlight) {
		v := l.sum[n]
		v.Add(q)
		l.sum[n] = v
	}
}

// drop removes h's holding and its contribution.
func (l *Ledger) drop(h Holder) {
	x, ok := l.holds[h]
	if !ok {
		return
	}
	l.change(x, func() { x.committed, x.pending, x.inFlight = nil, nil, false })
	delete(l.holds, h)
}

func (l *Ledger) freeLocked(used corev1.ResourceList) corev1.ResourceList {
	free := corev1.ResourceList{}
	for n, t := range l.total {
		f := t.DeepCopy()
		f.Sub(used[n])
		if f.Sign() < 0 {
			f = resource.Quantity{}
		}
		free[n] = f
	}
	return free
}

// freeExcluding is what is free if mine were given back (may be negative
// before that, when the total shrank below usage).
func (l *Ledger) freeExcluding(used, mine corev1.ResourceList) corev1.ResourceList {
	free := corev1.ResourceList{}
	for n, t := range l.total {
		f := t.DeepCopy()
		f.Sub(used[n])
		if q, ok := mine[n]; ok {
			f.Add(q)
		}
		free[n] = f
	}
	return free
}

func (l *Ledger) orderedWaiters() []waiter {
	out := make([]waiter, 0, len(l.waiting))
	for _, w := range l.waiting {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return older(out[i], out[j].Holder, out[j].created) })
	return out
}

func older(w waiter, h Holder, created time.Time) bool {
	if !w.created.Equal(created) {
		return w.created.Before(created)
	}
	if w.Key != h.Key {
		return w.Key.String() < h.Key.String()
	}
	return w.Class < h.Class
}

// wakeIfFreedLocked wakes waiters when usage fell for some resource.
func (l *Ledger) wakeIfFreedLocked(before corev1.ResourceList) func() {
	after := l.usedLocked()
	for n, b := range before {
		if a := after[n]; a.Cmp(b) < 0 {
			return l.wakeLocked()
		}
	}
	return func() {}
}

// wakeLocked picks, oldest first, the waiters whose offer fits what is free
// (each one picked reduces what is left for the next; one that does not fit
// does not block the rest) and returns a function that enqueues them, to be
// called without the lock held.
func (l *Ledger) wakeLocked() func() {
	if len(l.waiting) == 0 {
		return func() {}
	}
	free := l.freeLocked(l.usedLocked())
	var picked []waiter
	for _, w := range l.orderedWaiters() {
		if fits(w.offer, free, nil) {
			subtract(free, w.offer)
			picked = append(picked, w)
		}
	}
	wakes := make([]func(types.NamespacedName), len(picked))
	for i, w := range picked {
		wakes[i] = l.classes[w.Class].Wake
	}
	return func() {
		for i, w := range picked {
			if wakes[i] != nil {
				wakes[i](w.Key)
			}
		}
	}
}

// maxList is the per-resource maximum of committed and, while a write is in
// flight, pending.
func maxList(committed, pending corev1.ResourceList, inFlight bool) corev1.ResourceList {
	if !inFlight {
		return committed
	}
	out := committed.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for n, q := range pending {
		if c, ok := out[n]; !ok || q.Cmp(c) > 0 {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

// fits reports whether offer fits free, given that mine is already held.
func fits(offer, free, mine corev1.ResourceList) bool {
	return len(shortfall(offer, free, mine)) == 0
}

// shortfall lists, for each limited resource, why offer does not fit free;
// only the increase over mine must fit, so an acceptance the budget already
// holds is never revoked by a smaller total.
func shortfall(offer, free, mine corev1.ResourceList) []string {
	var short []string
	for n, want := range offer {
		f, limitedHere := free[n]
		if !limitedHere {
			continue
		}
		if m, ok := mine[n]; ok && want.Cmp(m) <= 0 {
			continue
		}
		if want.Cmp(f) > 0 {
			shown := f.DeepCopy()
			if shown.Sign() < 0 {
				shown = resource.Quantity{}
			}
			short = append(short, fmt.Sprintf("%s: asked %s, %s free", n, want.String(), shown.String()))
		}
	}
	sort.Strings(short)
	return short
}

func subtract(free, offer corev1.ResourceList) {
	for n, q := range offer {
		if f, ok := free[n]; ok {
			f.Sub(q)
			free[n] = f
		}
	}
}

// Access is the argument of budget.Budget.Ledger: only packages of this
// module can name it, so only they can reach a budget's ledger.
type Access struct{}
