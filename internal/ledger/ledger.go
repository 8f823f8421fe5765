package ledger

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Holder names one slice as one class sees it: the waiting line and the
// admissions are per class, so two classes sharing a budget stay apart while
// a slice moves between them.
type Holder struct {
	Class string
	Key   types.NamespacedName
}

// Class is what the ledger needs from a class that draws from it.
type Class struct {
	// Wake enqueues a slice of the class for a new decision; it must not
	// block, and it is called from any goroutine (the ledger's own refresh
	// of waiters' messages among them).
	Wake func(types.NamespacedName)
	// Selector is the class's slice selector; nil selects every slice of
	// the class.
	Selector labels.Selector
	// Priority orders the class's waiting slices before other classes' of
	// lower priority, and lets them reclaim from those with Preemption.
	Priority int32
}

// Options are a ledger's settings beyond its total.
type Options struct {
	// ConsumerLimit caps what one consumer holds from the ledger, per
	// resource it names; nil limits no consumer.
	ConsumerLimit corev1.ResourceList
	// OldestFirst admits waiting slices in plain creation order instead of
	// consumer by consumer, least-holding first.
	OldestFirst bool
	// Preemption lets a waiting slice reclaim capacity from Accepted slices
	// of strictly lower priority (see reclaim.go).
	Preemption bool
	// EvictionAfter, when positive, makes EvictionsDue name the running
	// pods to delete of a slice that has used more than it keeps for that
	// long after it was shrunk (see evict.go).
	EvictionAfter time.Duration
	// BorrowingLimit, LendingLimit and ReclaimWithinCohort are the
	// ledger's terms in a cohort (see cohort.go); they matter only once
	// it joins one (JoinCohort). nil limits mean absent: no borrowing
	// limit beyond what the cohort has idle, all of the total lendable.
	BorrowingLimit, LendingLimit corev1.ResourceList
	ReclaimWithinCohort          ReclaimPolicy
}

// ids orders locks for AdmitAll's locking.
var ids atomic.Uint64

// lockBox is the lock a ledger's state is under: its own, or its
// cohort's, which every member shares (Kueue's cache has one lock), so a
// decision reads every member's books at one instant. id orders locks
// for AdmitAll.
type lockBox struct {
	mu sync.Mutex
	id uint64
}

func newLockBox() *lockBox { return &lockBox{id: ids.Add(1)} }

// Ledger is safe for concurrent use.
type Ledger struct {
	name string
	opts Options

	// lk is the lock the ledger is under now: own, or its cohort's. It
	// changes only while both the old and the new lock are held (see
	// moveLocks), so whoever holds the current one sees it stay.
	lk  atomic.Pointer[lockBox]
	own *lockBox
	// cohort is the cohort the ledger is a member of (nil for none);
	// changed under both locks, like lk. leaving is set while it waits to
	// leave it for another, borrowing (see JoinCohort); under its lock.
	cohort  *Cohort
	leaving *leave
	// books are what the cluster shows the budget holds, and its total
	// (see books.go); line, the slices waiting for capacity (line.go).
	// Reclaims are chosen by a planner over the books (planner.go) and
	// applied here (reclaim.go).
	books books
	line  waitLine
	// refreshArmed: a refresh of the waiters' messages is scheduled;
	// refreshed is when the last one ran; refreshHeld, that no timer
	// runs it (see pending.go).
	refreshArmed bool
	refreshed    time.Time
	refreshHeld  bool
	// limits are the consumers' own limits, set at run time, overriding
	// opts.ConsumerLimit (see SetConsumerLimit). Their keys come from the
	// operator, not from consumers.
	limits map[string]corev1.ResourceList
	// log is the logger of the first manager that fed the ledger (see
	// SetLogger); until then it discards.
	log logr.Logger
	// victims are the slices capped for each waiter (see reclaim.go).
	victims map[Holder]map[types.NamespacedName]bool
	// epoch counts ForgetAll calls; uncounted is set by ForgetAll or a
	// new feed (Counting) and cleared by Counted of the same epoch: the
	// books are empty until a feed has counted the cluster (see ForgetAll).
	epoch     uint64
	uncounted bool
	// stale: ForgetAll kept the books of a cohort member whose last class
	// stopped; the next Attach forgets them (see ForgetAll).
	stale bool
	// evicting are the pods EvictionsDue named, and when, until they are
	// gone (see evict.go).
	evicting map[types.NamespacedName]time.Time
	// cappedKeys are the slices capped since EvictionsDue last looked, a
	// superset of those capped now: it walks these, not every slice,
	// dropping the keys no longer capped.
	cappedKeys map[types.NamespacedName]struct{}
	// closed, when set, says why the ledger admits nothing new;
	// unread, why it decides nothing; onReclaim is told of each
	// reclaim (see settings.go, and reclaim.go for the hook).
	closed    string
	unread    string
	onReclaim func(Reclaim)
	reclaims  []Reclaim
	// evictLive: EvictionAfter may be set at run time (see settings.go).
	evictLive bool
	// binding is the one manager the budget's classes run in, and what
	// the budget holds there (see bind.go); under its own lock.
	binding binding
	// named is the cohort the ledger joins by name (see cohort.go).
	named named
}

// New returns an empty ledger limiting exactly the resources of total. It
// refuses an empty name, an empty total and negative quantities.
func New(name string, total corev1.ResourceList, opts ...Options) (*Ledger, error) {
	if name == "" {
		return nil, errors.New("budget: empty name")
	}
	if len(total) == 0 {
		return nil, fmt.Errorf("budget %q: empty total: name every resource it limits (a resource it does not name is not limited; one named with 0 admits none)", name)
	}
	if err := checkQuantities("total", total); err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := checkQuantities("consumer limit", o.ConsumerLimit); err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	names := make([]corev1.ResourceName, 0, len(total))
	for n := range total {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	if err := checkCohortTerms(total, o, true); err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	l := &Ledger{
		name: name,
		own:  newLockBox(),
		opts: Options{ConsumerLimit: o.ConsumerLimit.DeepCopy(), OldestFirst: o.OldestFirst, Preemption: o.Preemption,
			EvictionAfter: o.EvictionAfter, BorrowingLimit: o.BorrowingLimit.DeepCopy(), LendingLimit: o.LendingLimit.DeepCopy(),
			ReclaimWithinCohort: o.ReclaimWithinCohort},
		line:       newWaitLine(),
		limits:     map[string]corev1.ResourceList{},
		log:        logr.Discard(),
		victims:    map[Holder]map[types.NamespacedName]bool{},
		evicting:   map[types.NamespacedName]time.Time{},
		cappedKeys: map[types.NamespacedName]struct{}{},
	}
	l.lk.Store(l.own)
	l.books = newBooks(names, total.DeepCopy(), l.changedLocked)
	return l, nil
}

// checkQuantities refuses negative quantities in rl, which is what (the
// total, a consumer limit).
func checkQuantities(what string, rl corev1.ResourceList) error {
	var neg []string
	for n, q := range rl {
		if q.Sign() < 0 {
			neg = append(neg, fmt.Sprintf("%s=%s", n, q.String()))
		}
	}
	if len(neg) > 0 {
		sort.Strings(neg)
		return fmt.Errorf("negative quantity in %s: %s", what, strings.Join(neg, ", "))
	}
	return nil
}

// Name returns the budget's name.
func (l *Ledger) Name() string { return l.name }

// Resources returns the resources the budget limits, sorted.
func (l *Ledger) Resources() []corev1.ResourceName {
	l.lock()
	defer l.unlock()
	return append([]corev1.ResourceName(nil), l.books.names...)
}

// ConsumerLimit returns a copy of what one consumer may hold; nil when
// consumers are not limited.
func (l *Ledger) ConsumerLimit() corev1.ResourceList {
	l.lock()
	defer l.unlock()
	return l.opts.ConsumerLimit.DeepCopy()
}

// Total returns a copy of the capacity.
func (l *Ledger) Total() corev1.ResourceList {
	l.lock()
	defer l.unlock()
	return l.books.total.DeepCopy()
}

// Used returns what slices hold, admissions in flight included, for the
// resources the budget limits.
func (l *Ledger) Used() corev1.ResourceList {
	l.lock()
	defer l.unlock()
	return l.books.used()
}

// Free returns total − used per limited resource, never below zero; in a
// cohort, what is available to the budget there (see cohort.go).
func (l *Ledger) Free() corev1.ResourceList {
	l.lock()
	defer l.unlock()
	free := l.freeLocked()
	for n, q := range free {
		if q.Sign() < 0 {
			free[n] = resource.Quantity{}
		}
	}
	return free
}

// SetTotal changes the capacity. A resource the budget limits that total
// does not name becomes zero (never unlimited); total may not name a
// resource the budget does not limit. Growing wakes waiting slices.
func (l *Ledger) SetTotal(total corev1.ResourceList) error {
	if err := checkQuantities("total", total); err != nil {
		return fmt.Errorf("budget %q: %w", l.name, err)
	}
	l.lock()
	next := corev1.ResourceList{}
	for _, n := range l.books.names {
		next[n] = resource.Quantity{}
		if q, ok := total[n]; ok {
			next[n] = q.DeepCopy()
		}
	}
	var extra []string
	for n := range total {
		if _, ok := next[n]; !ok {
			extra = append(extra, string(n))
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		err := fmt.Errorf("budget %q limits %s, not %s: a budget limits exactly the resources it was created with",
			l.name, joinNames(l.books.names), strings.Join(extra, ", "))
		l.unlock()
		return err
	}
	l.setTotalLocked(next)
	return nil
}

// setTotalLocked stores total (naming exactly the limited resources),
// wakes the waiters that now fit and, with Preemption, shrinks what a
// smaller total no longer covers; it unlocks l.
func (l *Ledger) setTotalLocked(total corev1.ResourceList) {
	l.books.total = total
	l.changedLocked()
	// A waiter a smaller total keeps out gives back what was taken for
	// it first: its victims are then shrunk for the total like the rest.
	rechecked, waiters := l.recheckReclaimsLocked()
	capped := l.fitTotalLocked()
	wake := l.wakeLocked()
	victims := l.wakeKeys(append(capped, rechecked...))
	wakeWaiters := l.wakeHolders(waiters)
	hook := l.takeReclaimsLocked()
	decided := l.decidedWakesLocked()
	l.unlock()
	wake()
	victims()
	wakeWaiters()
	hook()
	decided()
}

func joinNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// Attach registers a class drawing from the ledger: the slices it serves
// count from now on. It returns an error if the class is already attached.
func (l *Ledger) Attach(class string, c Class) error {
	l.lock()
	defer l.unlock()
	if _, ok := l.books.classes[class]; ok {
		return fmt.Errorf("class %q already draws from budget %q", class, l.name)
	}
	if l.stale {
		// Its books were kept when its last class stopped (ForgetAll):
		// the feed this class starts counts the cluster again.
		l.stale = false
		l.uncounted = true
		l.books.reset()
		clear(l.victims)
		clear(l.evicting)
	}
	l.books.classes[class] = c
	l.books.recountAll()
	l.books.retrackAll(l.line.has) // only adds: nothing held back is lifted
	return nil
}

// Attached is how many classes draw from the ledger now.
func (l *Ledger) Attached() int {
	l.lock()
	defer l.unlock()
	return len(l.books.classes)
}

// Detach stops a class drawing from the ledger: its waiting slices leave
// the line and it is woken no more. What its slices hold stays counted
// while the cluster shows they hold it (they left the budget's classes, see
// the package comment), so stopping a class frees nothing that is in use.
func (l *Ledger) Detach(class string) {
	l.lock()
	if _, ok := l.books.classes[class]; !ok {
		l.unlock()
		return
	}
	delete(l.books.classes, class)
	for h := range l.line.by {
		if h.Class == class {
			l.uncapLocked(h) // its victims are woken by their own classes' next event
		}
	}
	released := l.line.removeClass(class)
	l.books.recountAll()
	var wake func()
	if l.books.retrackAll(l.line.has) || released {
		wake = l.wakeLocked()
	}
	l.unlock()
	if wake != nil {
		wake()
	}
}

// Handle lets the SDK's own packages reach the ledger behind a public type
// without exporting it: the type embeds Handle through an unexported alias
// (so neither the field nor its method shows in the public type's
// documentation), and Of finds the ledger through Handle's unexported
// method, which only this package can name.
type Handle struct{ l *Ledger }

// NewHandle returns the handle of l.
func NewHandle(l *Ledger) Handle { return Handle{l: l} }

func (h Handle) ledgerOf() *Ledger { return h.l }

// Of returns the ledger behind v (a *budget.Budget), nil if it has none.
func Of(v any) *Ledger {
	if h, ok := v.(interface{ ledgerOf() *Ledger }); ok {
		return h.ledgerOf()
	}
	return nil
}
