package stopqueue

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/sliceclass/sliceclass/internal/testwait"
)

// run has 20 workers add, take and finish items as a controller's workers
// do, shuts q down after a moment, and reports whether every worker
// returned within a bound.
func run(q priorityqueue.PriorityQueue[int]) bool {
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for {
				q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(rand.Intn(4))}, rand.Intn(1000))
				item, _, shutdown := q.GetWithPriority()
				if shutdown {
					return
				}
				q.Done(item)
			}
		})
	}
	time.Sleep(10 * time.Millisecond)
	q.ShutDown()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(testwait.Timeout):
		return false
	}
}

// wake gives negative items: run adds only 0..999.
func wake(i int) int { return -1 - i }

func TestShutDownStrandsNoWorker(t *testing.T) {
	for round := range 60 {
		q := Wrap(priorityqueue.New[int](fmt.Sprintf("stopqueue-%d", round)), wake)
		if !run(q) {
			t.Fatalf("round %d: a worker did not return after ShutDown", round)
		}
	}
}

func TestTakersLeaveAtOnceAfterShutDown(t *testing.T) {
	q := Wrap(priorityqueue.New[int]("stopqueue-after"), wake)
	q.ShutDown()
	if !q.ShuttingDown() {
		t.Fatal("ShuttingDown is false after ShutDown")
	}
	if _, _, shutdown := q.GetWithPriority(); !shutdown {
		t.Fatal("GetWithPriority after ShutDown did not report the shutdown")
	}
	q.ShutDown() // a second call does nothing, and does not panic
}

func TestParkedTakerGetsNoWakeUpItem(t *testing.T) {
	q := Wrap(priorityqueue.New[int]("stopqueue-parked"), wake)
	got := make(chan bool)
	go func() {
		item, _, shutdown := q.GetWithPriority()
		got <- shutdown && item == 0
	}()
	// Let the taker park.
	for {
		q.mu.Lock()
		n := q.taking
		q.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	q.ShutDown()
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("the parked taker was handed an item, not a shutdown")
		}
	case <-time.After(testwait.Timeout):
		t.Fatal("the parked taker did not return")
	}
}
