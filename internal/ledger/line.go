package ledger

import (
	"container/heap"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waiter is a slice whose offer did not fit, waiting for capacity.
type waiter struct {
	Holder
	created time.Time
	offer   corev1.ResourceList
	// increase is what the offer asks beyond what the slice held when it
	// joined: what must be free to admit it.
	increase corev1.ResourceList
	// promised: capacity freed was set aside for it, and it was woken to
	// take it.
	promised bool
	index    int // in the heap
}

// before orders the line: oldest first, then by name, then by class.
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

// waitLine is the waiting slices in a binary heap, so joining and leaving
// cost O(log W), and the capacity promised to woken ones, kept as a sum so
// an admission reads it in O(resources).
type waitLine struct {
	h        waitHeap
	by       map[Holder]*waiter
	byKey    map[types.NamespacedName][]Holder
	promised corev1.ResourceList
	nPromise int
}

func newWaitLine() waitLine {
	return waitLine{by: map[Holder]*waiter{}, byKey: map[types.NamespacedName][]Holder{}, promised: corev1.ResourceList{}}
}

func (q *waitLine) len() int { return len(q.h) }

func (q *waitLine) has(h Holder) bool { _, ok := q.by[h]; return ok }

// join puts h in line (or updates its offer); it reports whether a promise
// to h was released (h no longer fits what was set aside for it).
func (q *waitLine) join(h Holder, created time.Time, offer, increase corev1.ResourceList) (released bool) {
	if w, ok := q.by[h]; ok {
		released = q.unpromise(w)
		w.offer, w.increase = offer.DeepCopy(), increase
		if !w.created.Equal(created) {
			w.created = created
			heap.Fix(&q.h, w.index)
		}
		return released
	}
	w := &waiter{Holder: h, created: created, offer: offer.DeepCopy(), increase: increase}
	q.by[h] = w
	q.byKey[h.Key] = append(q.byKey[h.Key], h)
	heap.Push(&q.h, w)
	return false
}

// remove takes h out of line; it reports whether h held a promise.
func (q *waitLine) remove(h Holder) (released bool) {
	w, ok := q.by[h]
	if !ok {
		return false
	}
	released = q.unpromise(w)
	heap.Remove(&q.h, w.index)
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
	for n, v := range w.increase {
		s := q.promised[n]
		s.Add(v)
		q.promised[n] = s
	}
}

func (q *waitLine) unpromise(w *waiter) bool {
	if !w.promised {
		return false
	}
	w.promised = false
	q.nPromise--
	for n, v := range w.increase {
		s := q.promised[n]
		s.Sub(v)
		q.promised[n] = s
	}
	return true
}

// promisedExcept is what is promised to waiters other than h, and to how
// many.
func (q *waitLine) promisedExcept(h Holder) (corev1.ResourceList, int) {
	w, mine := q.by[h]
	if !mine || !w.promised {
		return q.promised, q.nPromise
	}
	out := q.promised.DeepCopy()
	for n, v := range w.increase {
		s := out[n]
		s.Sub(v)
		out[n] = s
	}
	return out, q.nPromise - 1
}

// each visits waiters in line order until visit returns false. Visiting k
// waiters costs O(k log k): a second heap holds the frontier of the first.
func (q *waitLine) each(visit func(*waiter) bool) {
	if len(q.h) == 0 {
		return
	}
	frontier := indexHeap{h: q.h, idx: []int{0}}
	for len(frontier.idx) > 0 {
		i := heap.Pop(&frontier).(int)
		if !visit(q.h[i]) {
			return
		}
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(q.h) {
				heap.Push(&frontier, c)
			}
		}
	}
}

// waitHeap is a min-heap of waiters in line order.
type waitHeap []*waiter

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}

// indexHeap orders positions of a waitHeap by their waiters.
type indexHeap struct {
	h   waitHeap
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
