package ledger

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The snapshot decide reads, taken from the live books and lines of a
// domain under its one lock: the bridge from today's ledger to the loop
// of issue 50 (see decide.go). It reads and changes nothing.

// domainLocked is the ledgers of l's domain: its cohort's members, or l
// alone. The caller holds l's lock (the cohort's).
func (l *Ledger) domainLocked() []*Ledger {
	if l.cohort == nil {
		return []*Ledger{l}
	}
	return l.cohort.members
}

// frameLocked is the snapshot of l's domain, and its waiting slices (a
// slice waiting in two members is one waiter naming both). A member whose
// books are not counted, or whose settings are not read, pauses it.
func (l *Ledger) frameLocked() (frame, []frameWaiter) {
	var f frame
	inCohort := l.cohort != nil
	byHolder := map[Holder]*frameWaiter{}
	var order []Holder
	for _, m := range l.domainLocked() {
		switch {
		case m.unread != "":
			f.paused = "budget " + m.name + ": " + m.unread
		case m.uncounted:
			f.paused = "budget " + m.name + ": what the cluster holds is being counted again (its feed restarted)"
		}
		fm := frameMember{name: m.name, total: m.books.total, ownReclaim: m.opts.Preemption, limit: m.opts.ConsumerLimit,
			limits: m.limits, closed: m.closed}
		if inCohort {
			fm.borrowing, fm.cohortReclaim = m.opts.BorrowingLimit, m.opts.ReclaimWithinCohort
			fm.lending = corev1.ResourceList{}
			for _, n := range m.books.names {
				fm.lending[n] = m.lendableLocked(n) // a member leaving lends nothing
			}
			if m.leaving != nil {
				fm.borrowing = corev1.ResourceList{}
				for _, n := range m.books.names {
					fm.borrowing[n] = resource.Quantity{} // nor borrows more
				}
			}
		}
		for key, e := range m.books.slices {
			if len(e.counted) == 0 {
				continue
			}
			fm.slices = append(fm.slices, frameSlice{key: key, consumer: e.consumer, priority: m.books.classes[e.class].Priority,
				created: e.created, counted: e.counted, inUse: e.inUse})
		}
		sort.Slice(fm.slices, func(i, j int) bool { return fm.slices[i].key.String() < fm.slices[j].key.String() })
		f.members = append(f.members, fm)
		for h, w := range m.line.by {
			fw := byHolder[h]
			if fw == nil {
				fw = &frameWaiter{Holder: h, offer: w.offer, priority: w.priority, consumer: w.consumer, created: w.created}
				byHolder[h] = fw
				order = append(order, h)
			}
			fw.members = append(fw.members, m.name)
		}
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.Key != b.Key {
			return a.Key.String() < b.Key.String()
		}
		return a.Class < b.Class
	})
	ws := make([]frameWaiter, 0, len(order))
	for _, h := range order {
		ws = append(ws, *byHolder[h])
	}
	return f, ws
}
