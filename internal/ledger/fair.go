package ledger

import (
	"container/heap"

	corev1 "k8s.io/api/core/v1"
)

// Fair order: how the line chooses, within one priority, which waiting
// slices are promised what is free (wakeLocked). Consumer by consumer, the
// consumer holding the least (held and promised, by dominant share of the
// total) first, and within one consumer its oldest waiter that fits; a
// heap of consumers ordered by share, then by name.

// fair gives, one waiter at a time, to the consumer holding the least
// (share: held and promised, by dominant share) its oldest waiter that
// fits; take takes what it is given from free, and it stops when nothing
// of free is left.
func (q *waitLine) fair(share func(consumer string) float64, fits func(*waiter) bool, take func(*waiter), free corev1.ResourceList) {
	turns := &consumerQueue{}
	for c := range q.consumers {
		heap.Push(turns, consumerTurn{consumer: c, share: share(c)})
	}
	for turns.Len() > 0 && anyPositive(free) {
		turn := heap.Pop(turns).(consumerTurn)
		var found *waiter
		q.eachOf(turn.consumer, func(w *waiter) bool {
			if !w.promised && fits(w) {
				found = w
				return false
			}
			return true
		})
		if found == nil {
			continue // nothing of this consumer fits what is left
		}
		take(found)
		heap.Push(turns, consumerTurn{consumer: turn.consumer, share: share(turn.consumer)})
	}
}

// shareLocked is consumer's dominant share: the largest, over the limited
// resources, of what it holds and is promised over the total.
func (l *Ledger) shareLocked(consumer string) float64 {
	held, promised := l.books.byConsumer[consumer], l.line.promisedTo(consumer)
	share := 0.0
	for _, n := range l.books.names {
		t := l.books.total[n]
		if t.Sign() <= 0 {
			continue
		}
		h := held[n].DeepCopy()
		h.Add(promised[n])
		if s := h.AsApproximateFloat64() / t.AsApproximateFloat64(); s > share {
			share = s
		}
	}
	return share
}

type consumerTurn struct {
	consumer string
	share    float64
}

// consumerQueue orders consumers by share, then by name.
type consumerQueue []consumerTurn

func (q consumerQueue) Len() int { return len(q) }

func (q consumerQueue) Less(i, j int) bool {
	if q[i].share != q[j].share {
		return q[i].share < q[j].share
	}
	return q[i].consumer < q[j].consumer
}

func (q consumerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

func (q *consumerQueue) Push(x any) { *q = append(*q, x.(consumerTurn)) }

func (q *consumerQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
