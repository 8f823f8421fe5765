package ledger

import (
	"container/heap"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// planner chooses the victims of a reclaim over the books, the way Kueue's
// preemptor chooses over its snapshot: it reads the books as they stand
// under the Ledger's lock and changes nothing. Each plan is a list of
// cuts, what each victim is to keep; the Ledger applies it (reclaim.go).
type planner struct {
	books *books
	// share is a consumer's dominant share, held and promised (fair.go).
	share func(consumer string) float64
}

// cut is one victim of a plan and what it is to keep.
type cut struct {
	key  types.NamespacedName
	e    *entry
	keep corev1.ResourceList
}

// planner is the Ledger's planner over its books.
func (l *Ledger) planner() planner {
	return planner{books: &l.books, share: l.shareLocked}
}

// victim is a candidate of a reclaim.
type victim struct {
	key   types.NamespacedName
	e     *entry
	prio  int32
	share float64
}

// victimHeap orders candidates as victims are taken: the lowest priority
// first, then the consumer holding the largest dominant share, then the
// newest slice (then by name).
type victimHeap []victim

func (h victimHeap) Len() int { return len(h) }

func (h victimHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	switch {
	case a.prio != b.prio:
		return a.prio < b.prio
	case a.share != b.share:
		return a.share > b.share
	case !a.e.created.Equal(b.e.created):
		return a.e.created.After(b.e.created)
	}
	if a.key.Namespace != b.key.Namespace {
		return a.key.Namespace < b.key.Namespace
	}
	return a.key.Name < b.key.Name
}

func (h victimHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *victimHeap) Push(x any) { *h = append(*h, x.(victim)) }

func (h *victimHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// keepOf is what e keeps now: its cap, or all it counts.
func keepOf(e *entry) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range e.counted {
		out[n] = q.DeepCopy()
	}
	if e.capped != nil {
		for n, q := range e.capped.keep {
			if c, ok := out[n]; !ok || q.Cmp(c) < 0 {
				out[n] = q.DeepCopy()
			}
		}
	}
	return out
}

// keepAmount is what e keeps now of resource n: the smaller of what it
// counts and its cap.
func keepAmount(e *entry, n corev1.ResourceName) resource.Quantity {
	q := e.counted[n]
	if e.capped != nil {
		if c, ok := e.capped.keep[n]; ok && c.Cmp(q) < 0 {
			return c
		}
	}
	return q
}

// priorityOf is the priority of the class serving e (0 when none does).
func (p planner) priorityOf(e *entry) int32 {
	return p.books.classes[e.class].Priority
}

// overTotal plans the cuts that bring what the slices count within the
// total, excess being what they count beyond it: the lowest priorities
// first, then the largest consumers, then the newest slices; a slice
// capped for a waiter or its consumer's limit is left as it is.
func (p planner) overTotal(excess corev1.ResourceList) map[*entry]corev1.ResourceList {
	want := map[*entry]corev1.ResourceList{}
	if len(excess) == 0 {
		return want
	}
	shares := map[string]float64{}
	cands := make(victimHeap, 0, 64)
	for key, e := range p.books.slices {
		if !e.member || len(e.counted) == 0 || (e.capped != nil && !e.capped.pool) {
			continue
		}
		share, ok := shares[e.consumer]
		if !ok {
			share = p.share(e.consumer)
			shares[e.consumer] = share
		}
		cands = append(cands, victim{key: key, e: e, prio: p.priorityOf(e), share: share})
	}
	heap.Init(&cands)
	for len(excess) > 0 && cands.Len() > 0 {
		c := heap.Pop(&cands).(victim)
		keep := c.e.counted.DeepCopy()
		if takeFrom(keep, excess) {
			want[c.e] = keep
		}
	}
	return want
}

// overLimit plans the cuts that bring a consumer holding excess beyond
// its limit within it: mine are its slices that count, shrunk newest
// first. excess is left with what the cuts could not take.
func (p planner) overLimit(mine []types.NamespacedName, excess corev1.ResourceList) []cut {
	sort.Slice(mine, func(i, j int) bool {
		a, b := p.books.slices[mine[i]], p.books.slices[mine[j]]
		if !a.created.Equal(b.created) {
			return a.created.After(b.created)
		}
		return mine[i].String() < mine[j].String()
	})
	var cuts []cut
	for _, key := range mine {
		if len(excess) == 0 {
			break
		}
		e := p.books.slices[key]
		keep := keepOf(e)
		if takeFrom(keep, excess) {
			cuts = append(cuts, cut{key: key, e: e, keep: keep})
		}
	}
	return cuts
}

// forWaiter plans the cuts that free lacking for the waiter h of
// priority prio, from member slices of strictly lower priority not
// already yielding to their consumer's limit, the total, or a waiter at
// least as high: the lowest priority first, then the consumer holding the
// largest dominant share, then the newest slice, each cut by at most what
// is still lacking. It plans nothing when even all they keep would not do.
func (p planner) forWaiter(h Holder, prio int32, lacking corev1.ResourceList) []cut {
	// One pass over the budget's slices: the candidates and what they
	// could yield of each lacking resource, with no allocation per slice;
	// then only the victims needed are taken from a heap in victim order.
	shares := map[string]float64{}
	cands := make(victimHeap, 0, 64)
	avail := corev1.ResourceList{}
	for key, e := range p.books.slices {
		if !e.member || key == h.Key || len(e.counted) == 0 {
			continue
		}
		mine := p.priorityOf(e)
		if mine >= prio {
			continue
		}
		if e.capped != nil && (e.capped.limit || e.capped.pool || (e.capped.waiter != h && e.capped.priority >= prio)) {
			continue // already yielding to its consumer's limit, or to a waiter at least as high
		}
		useful := false
		for n := range lacking {
			if q := keepAmount(e, n); q.Sign() > 0 {
				add(avail, n, q)
				useful = true
			}
		}
		if !useful {
			continue
		}
		share, ok := shares[e.consumer]
		if !ok {
			share = p.share(e.consumer)
			shares[e.consumer] = share
		}
		cands = append(cands, victim{key: key, e: e, prio: mine, share: share})
	}
	for n, need := range lacking {
		if a := avail[n]; a.Cmp(need) < 0 {
			return nil // even all of it would not do: touch no one
		}
	}
	heap.Init(&cands)
	left := lacking.DeepCopy()
	var cuts []cut
	for len(left) > 0 && cands.Len() > 0 {
		c := heap.Pop(&cands).(victim)
		keep := keepOf(c.e)
		takeFrom(keep, left)
		cuts = append(cuts, cut{key: c.key, e: c.e, keep: keep})
	}
	return cuts
}

// giveBack plans what the victims of a waiter get back when less is being
// reclaimed for it than they still yield (surplus, per resource): the
// victims taken last by forWaiter's order give back first, each raising
// what it keeps by at most what it still yields. It returns the new keeps
// of the victims that get something back, by slice.
func (p planner) giveBack(victims []types.NamespacedName, surplus corev1.ResourceList) map[types.NamespacedName]corev1.ResourceList {
	out := map[types.NamespacedName]corev1.ResourceList{}
	if len(surplus) == 0 {
		return out
	}
	left := surplus.DeepCopy()
	order := make(victimHeap, 0, len(victims))
	shares := map[string]float64{}
	for _, key := range victims {
		e := p.books.slices[key]
		share, ok := shares[e.consumer]
		if !ok {
			share = p.share(e.consumer)
			shares[e.consumer] = share
		}
		order = append(order, victim{key: key, e: e, prio: p.priorityOf(e), share: share})
	}
	sort.Slice(order, func(i, j int) bool { return order.Less(j, i) }) // the last taken first
	for _, v := range order {
		if len(left) == 0 {
			break
		}
		keep := v.e.capped.keep.DeepCopy()
		raised := false
		for n, want := range left {
			yields := v.e.counted[n].DeepCopy()
			yields.Sub(keep[n])
			if yields.Sign() <= 0 {
				continue
			}
			give := want.DeepCopy()
			if yields.Cmp(give) < 0 {
				give = yields
			}
			add(keep, n, give)
			want.Sub(give)
			if want.Sign() <= 0 {
				delete(left, n)
			} else {
				left[n] = want
			}
			raised = true
		}
		if raised {
			out[v.key] = keep
		}
	}
	return out
}

// takeFrom lowers keep by what is still wanted, per resource, at most
// what keep has, and lowers want by what it took (a resource fully taken
// leaves want); it reports whether it took anything.
func takeFrom(keep, want corev1.ResourceList) bool {
	took := false
	for n, need := range want {
		have, ok := keep[n]
		if !ok || have.Sign() <= 0 {
			continue
		}
		take := need.DeepCopy()
		if have.Cmp(take) < 0 {
			take = have.DeepCopy()
		}
		have.Sub(take)
		keep[n] = have
		need.Sub(take)
		if need.Sign() <= 0 {
			delete(want, n)
		} else {
			want[n] = need
		}
		took = true
	}
	return took
}
