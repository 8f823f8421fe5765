package ledger

import (
	"container/heap"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waiter is a slice whose offer did not fit, waiting for capacity.
type waiter struct {
	Holder
	consumer string
	created  time.Time
	offer    corev1.ResourceList
	// increase is what the offer asks beyond what the slice held when it
	// joined: what must be free to admit it.
	increase corev1.ResourceList
	// promised: capacity freed was set aside for it, and it was woken to
	// take it.
	promised bool
	// told is what the ledger last told it blocks it (reason and
	// message): a change makes refresh wake it to say so.
	told string
	// priority is its class's; reclaiming: capacity is being reclaimed
	// for it from lower priorities, and promised to it.
	priority   int32
	reclaiming bool
	// pos is the waiter's index in the whole line's heap (0) and in its
	// consumer's (1).
	pos [2]int
}

// before orders a line: oldest first, then by name, then by class.
func (w *waiter) before(o *waiter) bool {
	if !w.created.Equal(o.created) {
		return w.created.Before(o.created)
	}
	if w.Key != o.Key {
		if w.Key.Namespace != o.Key.Namespace {
			return w.Key.Namespace < o.Key.Namespace
		}
		return w.Key.Name < o.Key.Name
	}
	return w.Class < o.Class
}

// waitLine is the waiting slices in binary heaps (the whole line, and one
// per consumer), so joining and leaving cost O(log W), and the capacity
// promised to woken ones, kept as sums (in all and per consumer) so an
// admission reads them in O(resources).
type waitLine struct {
	all       *waitHeap
	consumers map[string]*waitHeap
	by        map[Holder]*waiter
	byKey     map[types.NamespacedName][]Holder
	promised  corev1.ResourceList
	nPromise  int
	// promisedBy is what is promised to each consumer's waiters, for the
	// consumers with a promised waiter only: the consumer's entry goes with
	// its last promise, so consumers that come and go leave nothing behind.
	promisedBy map[string]*promiseSum
}

// promiseSum is what is promised to one consumer's waiters, and to how
// many.
type promiseSum struct {
	sum corev1.ResourceList
	n   int
}

func newWaitLine() waitLine {
	return waitLine{
		all:        &waitHeap{which: 0},
		consumers:  map[string]*waitHeap{},
		by:         map[Holder]*waiter{},
		byKey:      map[types.NamespacedName][]Holder{},
		promised:   corev1.ResourceList{},
		promisedBy: map[string]*promiseSum{},
	}
}

func (q *waitLine) len() int { return len(q.all.items) }

// priorities lists the waiters' priorities, highest first.
func (q *waitLine) priorities() []int32 {
	if len(q.all.items) == 0 {
		return nil
	}
	first := q.all.items[0].priority
	same := true
	for _, w := range q.all.items {
		if w.priority != first {
			same = false
			break
		}
	}
	if same {
		return []int32{first}
	}
	seen := map[int32]bool{}
	var out []int32
	for _, w := range q.all.items {
		if !seen[w.priority] {
			seen[w.priority] = true
			out = append(out, w.priority)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out
}

func (q *waitLine) has(h Holder) bool { _, ok := q.by[h]; return ok }

// join puts r's slice in line (or updates its offer); it reports whether
// a promise to it was released (it no longer fits what was set aside).
func (q *waitLine) join(r Request, increase corev1.ResourceList) (released bool) {
	if w, ok := q.by[r.Holder]; ok {
		released = q.unpromise(w)
		w.reclaiming = false
		w.offer, w.increase, w.priority = r.Offer.DeepCopy(), increase, r.Priority
		if !w.created.Equal(r.Created) || w.consumer != r.Consumer {
			q.drop(w)
			w.created, w.consumer = r.Created, r.Consumer
			q.push(w)
		}
		return released
	}
	w := &waiter{Holder: r.Holder, consumer: r.Consumer, created: r.Created, offer: r.Offer.DeepCopy(), increase: increase, priority: r.Priority}
	q.by[r.Holder] = w
	q.byKey[r.Key] = append(q.byKey[r.Key], r.Holder)
	q.push(w)
	return false
}

func (q *waitLine) push(w *waiter) {
	heap.Push(q.all, w)
	c := q.consumers[w.consumer]
	if c == nil {
		c = &waitHeap{which: 1}
		q.consumers[w.consumer] = c
	}
	heap.Push(c, w)
}

func (q *waitLine) drop(w *waiter) {
	heap.Remove(q.all, w.pos[0])
	c := q.consumers[w.consumer]
	heap.Remove(c, w.pos[1])
	if len(c.items) == 0 {
		delete(q.consumers, w.consumer)
	}
}

// remove takes h out of line; it reports whether h held a promise.
func (q *waitLine) remove(h Holder) (released bool) {
	w, ok := q.by[h]
	if !ok {
		return false
	}
	released = q.unpromise(w)
	q.drop(w)
	delete(q.by, h)
	hs := q.byKey[h.Key]
	for i, x := range hs {
		if x == h {
			hs = append(hs[:i], hs[i+1:]...)
			break
		}
	}
	if len(hs) == 0 {
		delete(q.byKey, h.Key)
	} else {
		q.byKey[h.Key] = hs
	}
	return released
}

// removeKey takes every class's waiter for key out of line.
func (q *waitLine) removeKey(key types.NamespacedName) (released bool) {
	for _, h := range append([]Holder(nil), q.byKey[key]...) {
		if q.remove(h) {
			released = true
		}
	}
	return released
}

// removeClass takes a class's waiters out of line.
func (q *waitLine) removeClass(class string) (released bool) {
	for h := range q.by {
		if h.Class == class && q.remove(h) {
			released = true
		}
	}
	return released
}

func (q *waitLine) promise(w *waiter) {
	if w.promised {
		return
	}
	w.promised = true
	q.nPromise++
	mine := q.promisedBy[w.consumer]
	if mine == nil {
		mine = &promiseSum{sum: corev1.ResourceList{}}
		q.promisedBy[w.consumer] = mine
	}
	mine.n++
	plus(q.promised, w.increase)
	plus(mine.sum, w.increase)
}

func (q *waitLine) unpromise(w *waiter) bool {
	if !w.promised {
		return false
	}
	w.promised = false
	q.nPromise--
	minus(q.promised, w.increase)
	if mine := q.promisedBy[w.consumer]; mine != nil {
		if mine.n--; mine.n <= 0 {
			delete(q.promisedBy, w.consumer)
		} else {
			minus(mine.sum, w.increase)
		}
	}
	return true
}

// promisedTo is what is promised to consumer's waiters (nil for none).
func (q *waitLine) promisedTo(consumer string) corev1.ResourceList {
	if mine := q.promisedBy[consumer]; mine != nil {
		return mine.sum
	}
	return nil
}

// promisedToOthers is what is promised to consumer's waiters other than h.
func (q *waitLine) promisedToOthers(consumer string, h Holder) corev1.ResourceList {
	mine := q.promisedTo(consumer)
	w, ok := q.by[h]
	if !ok || !w.promised || w.consumer != consumer {
		return mine
	}
	out := mine.DeepCopy()
	minus(out, w.increase)
	return out
}

// spare lowers free, in place, by what is promised to waiters other than
// h (to every waiter, for the zero Holder), and returns it with how many
// waiters those promises are to.
func (q *waitLine) spare(free corev1.ResourceList, h Holder) (corev1.ResourceList, int) {
	n := q.nPromise
	minus(free, q.promised)
	if w, ok := q.by[h]; ok && w.promised {
		plus(free, w.increase) // its own promise is its own
		n--
	}
	return free, n
}

// plus adds rl to sum, per resource: the upkeep of the promise sums.
func plus(sum, rl corev1.ResourceList) {
	for n, v := range rl {
		q := sum[n]
		q.Add(v)
		sum[n] = q
	}
}

// minus takes rl away from sum, per resource.
func minus(sum, rl corev1.ResourceList) {
	for n, v := range rl {
		q := sum[n]
		q.Sub(v)
		sum[n] = q
	}
}

// each visits the whole line in order until visit returns false.
func (q *waitLine) each(visit func(*waiter) bool) { q.all.each(visit) }

// eachOf visits consumer's waiters in order until visit returns false.
func (q *waitLine) eachOf(consumer string, visit func(*waiter) bool) {
	if c := q.consumers[consumer]; c != nil {
		c.each(visit)
	}
}

// waitHeap is a min-heap of waiters in line order; which says which of a
// waiter's positions it keeps.
type waitHeap struct {
	items []*waiter
	which int
}

func (h *waitHeap) Len() int           { return len(h.items) }
func (h *waitHeap) Less(i, j int) bool { return h.items[i].before(h.items[j]) }
func (h *waitHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].pos[h.which], h.items[j].pos[h.which] = i, j
}
func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.pos[h.which] = len(h.items)
	h.items = append(h.items, w)
}
func (h *waitHeap) Pop() any {
	old := h.items
	w := old[len(old)-1]
	old[len(old)-1] = nil
	h.items = old[:len(old)-1]
	w.pos[h.which] = -1
	return w
}

// each visits waiters in order until visit returns false. Visiting k
// waiters costs O(k log k): a second heap holds the frontier of the first.
func (h *waitHeap) each(visit func(*waiter) bool) {
	if len(h.items) == 0 {
		return
	}
	frontier := indexHeap{h: h.items, idx: []int{0}}
	for len(frontier.idx) > 0 {
		i := heap.Pop(&frontier).(int)
		if !visit(h.items[i]) {
			return
		}
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h.items) {
				heap.Push(&frontier, c)
			}
		}
	}
}

// indexHeap orders positions of a heap's items by their waiters.
type indexHeap struct {
	h   []*waiter
	idx []int
}

func (x indexHeap) Len() int           { return len(x.idx) }
func (x indexHeap) Less(i, j int) bool { return x.h[x.idx[i]].before(x.h[x.idx[j]]) }
func (x indexHeap) Swap(i, j int)      { x.idx[i], x.idx[j] = x.idx[j], x.idx[i] }
func (x *indexHeap) Push(v any)        { x.idx = append(x.idx, v.(int)) }
func (x *indexHeap) Pop() any {
	v := x.idx[len(x.idx)-1]
	x.idx = x.idx[:len(x.idx)-1]
	return v
}
