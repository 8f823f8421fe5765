// Package stopqueue wraps controller-runtime's priority queue so that
// shutting it down never strands a worker.
//
// controller-runtime's priority queue can deadlock on ShutDown
// (kubernetes-sigs/controller-runtime#3538): a worker parked in
// GetWithPriority leaves when the queue shuts down, while the queue's
// hand-out loop, which counted it as a taker, blocks for ever sending it an
// item, holding the lock that Done needs. Every worker still reconciling
// then blocks in Done, the controller never returns, and the manager gives
// up after its grace period.
//
// Which releases carry the fix, read from each release's
// pkg/controller/priorityqueue/priorityqueue.go (the hand-out's send to a
// taker also selects on the queue's done channel): v0.25.0, v0.25.1 and
// v0.25.2 (the fix, #3540 on main, was released with v0.25.0); no v0.24
// release (v0.24.0 and v0.24.1 send unguarded; the backport, #3549 on
// release-0.24, is in no release yet); no v0.23 release (v0.23.0 to v0.23.3,
// the line Liqo v1.2.0 pins, has no fix). sliceclass's go.mod keeps the
// lowest controller-runtime we support (v0.23.1), so its class controllers
// build their queue through Wrap.
//
// Wrap lets no worker be inside the queue's GetWithPriority when the
// queue is shut down: ShutDown first refuses new takers, then hands each
// parked one a wake-up item (a key no object has), waits for them to leave,
// and only then shuts the queue down. Delete this package when the lowest
// controller-runtime go.mod requires carries the fix: v0.25.0 or later, or a
// v0.24 patch release that ships #3549.
package stopqueue

import (
	"math"
	"sync"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// wakeTimeout bounds how long ShutDown waits for parked takers to leave
// before it shuts the queue down anyway.
const wakeTimeout = 5 * time.Second

// Queue is a priority queue whose ShutDown waits for its parked takers.
type Queue[T comparable] struct {
	priorityqueue.PriorityQueue[T]

	// wake returns the i-th wake-up item: distinct for each i, and a key
	// no real item has.
	wake func(i int) T

	mu       sync.Mutex
	stopping bool
	// taking counts the callers inside the wrapped GetWithPriority.
	taking int
	// left is closed when stopping and no caller is inside any more.
	left chan struct{}
}

// Wrap returns q with a ShutDown that strands no worker. wake(i) must
// return a distinct item for each i that no caller ever adds.
func Wrap[T comparable](q priorityqueue.PriorityQueue[T], wake func(i int) T) *Queue[T] {
	return &Queue[T]{PriorityQueue: q, wake: wake, left: make(chan struct{})}
}

// GetWithPriority implements priorityqueue.PriorityQueue: it reports a
// shutdown once ShutDown has begun, and gives back (Done) an item it took
// while ShutDown was waking the takers.
func (q *Queue[T]) GetWithPriority() (T, int, bool) {
	var zero T
	q.mu.Lock()
	if q.stopping {
		q.mu.Unlock()
		return zero, 0, true
	}
	q.taking++
	q.mu.Unlock()

	item, priority, shutdown := q.PriorityQueue.GetWithPriority()

	q.mu.Lock()
	q.taking--
	stopping := q.stopping
	if stopping && q.taking == 0 {
		close(q.left)
	}
	q.mu.Unlock()
	if stopping {
		if !shutdown {
			q.Done(item)
		}
		return zero, 0, true
	}
	return item, priority, shutdown
}

// Get implements workqueue.TypedInterface through GetWithPriority.
func (q *Queue[T]) Get() (T, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// ShutDown implements workqueue.TypedInterface: it refuses new takers,
// wakes the parked ones with one wake-up item each, waits (at most
// wakeTimeout) for them to leave, then shuts the wrapped queue down. Only
// the first call does anything.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	if q.stopping {
		q.mu.Unlock()
		return
	}
	q.stopping = true
	parked := q.taking
	if parked == 0 {
		close(q.left)
	}
	q.mu.Unlock()
	for i := range parked {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(math.MaxInt)}, q.wake(i))
	}
	t := time.NewTimer(wakeTimeout)
	defer t.Stop()
	select {
	case <-q.left:
	case <-t.C:
	}
	q.PriorityQueue.ShutDown()
}

// ShutDownWithDrain implements workqueue.TypedInterface as the wrapped
// queue does: a ShutDown.
func (q *Queue[T]) ShutDownWithDrain() { q.ShutDown() }

// ShuttingDown implements workqueue.TypedInterface: true once ShutDown has
// begun.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stopping || q.PriorityQueue.ShuttingDown()
}
