package ledger

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Snapshot is what a ledger holds at one moment, read under one lock: the
// figures a budget's status shows. Every list names exactly the resources
// the ledger limits, zero included.
type Snapshot struct {
	Total, Used, InUse, Reclaiming, Free corev1.ResourceList
	// Borrowed is what the slices hold beyond the total, Lent what other
	// members' slices hold of it (both zero outside a cohort; see
	// cohort.go); Free is then what is available to the budget in its
	// cohort.
	Borrowed, Lent corev1.ResourceList
	// Cohort is the name of the budget's cohort, "" for none.
	Cohort string
	// Accepted counts the slices of the budget's classes that hold an
	// acceptance (observed, or whose write is in flight), whether or not
	// a larger offer of theirs waits; Waiting the slices in line that
	// hold none; Growing the Accepted slices in line (their larger offer
	// waits). No slice is in both Accepted and Waiting.
	Accepted, Waiting, Growing int
	// Consumers are the consumers that hold something or wait, the
	// largest first by their dominant share of the total, then by name.
	Consumers []ConsumerSnapshot
	// Closed is why the ledger admits nothing new ("" when open).
	Closed string
	// Counted reports whether the books count the cluster: a feed has
	// delivered its initial lists since the ledger was made or last
	// forgot them (ForgetAll). Until then every figure above is of books
	// not yet counted (a new leader's, say), not what the cluster holds.
	Counted bool
}

// ConsumerSnapshot is what one consumer holds (for the resources the
// ledger limits) and how many of its slices wait holding no acceptance, as
// Snapshot.Waiting counts them.
type ConsumerSnapshot struct {
	Name    string
	Used    corev1.ResourceList
	Waiting int
	share   float64
}

// Snapshot returns what the ledger holds now.
func (l *Ledger) Snapshot() Snapshot {
	l.lock()
	defer l.unlock()
	s := Snapshot{
		Total: corev1.ResourceList{}, Used: l.books.used(), InUse: corev1.ResourceList{}, Reclaiming: corev1.ResourceList{},
		Free: l.freeLocked(), Borrowed: l.borrowedLocked(), Lent: l.lentLocked(), Closed: l.closed, Counted: l.books.counted,
	}
	if l.cohort != nil {
		s.Cohort = l.cohort.name
	}
	for _, n := range l.books.names {
		s.Total[n] = l.books.total[n].DeepCopy()
		if f := s.Lent[n]; !f.IsZero() {
			f.Format = s.Total[n].Format
			s.Lent[n] = f
		}
		s.InUse[n] = resource.Quantity{}
		s.Reclaiming[n] = resource.Quantity{}
		if f := s.Free[n]; f.Sign() < 0 {
			s.Free[n] = resource.Quantity{}
		}
	}
	for _, e := range l.books.slices {
		if holdsAcceptance(e) {
			s.Accepted++
		}
		if len(e.counted) == 0 {
			continue
		}
		for n, q := range e.inUse {
			if _, limited := s.InUse[n]; limited {
				add(s.InUse, n, q)
			}
		}
		if e.capped != nil {
			for n, keep := range e.capped.keep {
				if _, limited := s.Reclaiming[n]; !limited {
					continue
				}
				over := e.counted[n].DeepCopy()
				over.Sub(keep)
				if over.Sign() > 0 {
					add(s.Reclaiming, n, over)
				}
			}
		}
	}
	byName := map[string]*ConsumerSnapshot{}
	of := func(c string) *ConsumerSnapshot {
		cs := byName[c]
		if cs == nil {
			cs = &ConsumerSnapshot{Name: c, Used: corev1.ResourceList{}}
			for _, n := range l.books.names {
				cs.Used[n] = resource.Quantity{}
			}
			byName[c] = cs
		}
		return cs
	}
	for c, held := range l.books.byConsumer {
		cs := of(c)
		for _, n := range l.books.names {
			if q, ok := held[n]; ok {
				cs.Used[n] = q.DeepCopy()
			}
		}
	}
	l.line.each(func(w *waiter) bool {
		if e := l.books.slices[w.Key]; e != nil && holdsAcceptance(e) {
			s.Growing++ // counted in Accepted
			return true
		}
		s.Waiting++
		of(w.consumer).Waiting++
		return true
	})
	for _, cs := range byName {
		for _, n := range l.books.names {
			t, u := l.books.total[n], cs.Used[n]
			if t.Sign() > 0 {
				cs.share = max(cs.share, u.AsApproximateFloat64()/t.AsApproximateFloat64())
			}
		}
		s.Consumers = append(s.Consumers, *cs)
	}
	sort.Slice(s.Consumers, func(i, j int) bool {
		a, b := s.Consumers[i], s.Consumers[j]
		if a.share != b.share {
			return a.share > b.share
		}
		if a.Waiting != b.Waiting {
			return a.Waiting > b.Waiting
		}
		return a.Name < b.Name
	})
	return s
}

// holdsAcceptance reports whether e is a slice of the budget's classes
// (or not yet seen) that holds an acceptance: observed Accepted, or with
// an admission being written.
func holdsAcceptance(e *entry) bool {
	return (e.member || !e.seen) && (e.accepted || len(e.attempts) > 0)
}
