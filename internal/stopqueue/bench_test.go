package stopqueue

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// benchCycle measures one item's way through q as a controller's worker
// takes it: Add, GetWithPriority, Done.
func benchCycle(b *testing.B, q priorityqueue.PriorityQueue[int]) {
	b.Helper()
	defer q.ShutDown()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.Add(i)
		item, _, _ := q.GetWithPriority()
		q.Done(item)
	}
}

// BenchmarkCycle compares controller-runtime's priority queue with the
// wrapped one, in one run: the wrapper's cost per item.
func BenchmarkCycle(b *testing.B) {
	b.Run("raw", func(b *testing.B) { benchCycle(b, priorityqueue.New[int]("bench-raw")) })
	b.Run("wrapped", func(b *testing.B) { benchCycle(b, Wrap(priorityqueue.New[int]("bench-wrapped"), wake)) })
}
