package slicetest

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// pendingQueue is a class controller's workqueue in the harness: it keeps
// what the controller's sources enqueue (watch events that pass the
// predicates, Tenant and namespace changes, budget wake-ups and reclaims)
// in order and without duplicates, and gives the controller's workers
// nothing: the test decides when a pending slice is reconciled
// (Harness.ReconcilePending). A delayed or rate-limited add is pending at
// once: the harness has no clock.
type pendingQueue struct {
	mu      sync.Mutex
	keys    []reconcile.Request
	down    bool
	downCh  chan struct{}
	waiting chan struct{} // closed when a worker first waits: the controller started
	once    sync.Once
}

var _ workqueue.TypedRateLimitingInterface[reconcile.Request] = &pendingQueue{}

func newPendingQueue() *pendingQueue {
	return &pendingQueue{downCh: make(chan struct{}), waiting: make(chan struct{})}
}

func (q *pendingQueue) Add(item reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range q.keys {
		if k == item {
			return
		}
	}
	q.keys = append(q.keys, item)
}

// take removes and returns the first pending request.
func (q *pendingQueue) take() (reconcile.Request, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.keys) == 0 {
		return reconcile.Request{}, false
	}
	k := q.keys[0]
	q.keys = q.keys[1:]
	return k, true
}

// drop removes item if it is pending: it is being reconciled now.
func (q *pendingQueue) drop(item reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, k := range q.keys {
		if k == item {
			q.keys = append(q.keys[:i], q.keys[i+1:]...)
			return
		}
	}
}

func (q *pendingQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.keys)
}

// Get blocks until the queue shuts down: the workers get nothing.
func (q *pendingQueue) Get() (reconcile.Request, bool) {
	q.once.Do(func() { close(q.waiting) })
	<-q.downCh
	return reconcile.Request{}, true
}

func (q *pendingQueue) Done(reconcile.Request) {}

func (q *pendingQueue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.down {
		q.down = true
		close(q.downCh)
	}
}

func (q *pendingQueue) ShutDownWithDrain() { q.ShutDown() }

func (q *pendingQueue) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.down
}

func (q *pendingQueue) AddAfter(item reconcile.Request, _ time.Duration) { q.Add(item) }
func (q *pendingQueue) AddRateLimited(item reconcile.Request)            { q.Add(item) }
func (q *pendingQueue) Forget(reconcile.Request)                         {}
func (q *pendingQueue) NumRequeues(reconcile.Request) int                { return 0 }
