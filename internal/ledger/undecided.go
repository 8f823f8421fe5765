package ledger

import (
	"k8s.io/apimachinery/pkg/types"
)

// Undecided slices of higher priority hold back the growth of lower ones.
//
// What a budget promised a waiting slice (the capacity reclaimed for it,
// its place in line) lives in the leader's memory, not in the cluster. A
// new leader counts what the cluster holds at once, but learns who waits
// only as each class decides its slices again, in whatever order its
// workers take them. Without this rule a slice of lower priority decided
// first would be granted what a waiter of higher priority was promised
// (spot, shrunk 8 → 4 for gold, given its 8 back as one of its pods ends),
// only to be shrunk again when gold is decided: its virtual node and Liqo's
// Quota grow and shrink for nothing.
//
// So a slice that is not Accepted, of an attached class that selects it,
// seen in the books' initial lists (slices created later race as any two
// decisions do, and may be decided before the feed shows them), is
// undecided from the moment the books see it until its class decides it
// (AdmitAll, CheckAll or Leave for it), or it joins the line, leaves the
// class, or is gone. While a slice of priority P is undecided, no slice of
// priority below P grows, and no waiter below P is promised capacity; the
// refusal says so. The way out for a class that never comes back is the
// same as for any slice leaving a class: Detach (the class stopped, or its
// manager) drops its slices from the undecided, and so does a deletion.
// A class that is attached decides each of its slices once as its
// controller starts, so the hold lasts one pass of the higher classes'
// initial lists.
type undecided struct {
	// of is the priority each undecided slice was counted under.
	of map[types.NamespacedName]int32
	// count is how many slices are undecided, by priority.
	count map[int32]int
}

func newUndecided() undecided {
	return undecided{of: map[types.NamespacedName]int32{}, count: map[int32]int{}}
}

// track brings key's place among the undecided up to date with e (nil:
// gone); waits says whether a holder is in the waiting line. It returns
// true when the last undecided slice of a priority was decided: the
// waiters it held back may fit now.
func (b *books) track(key types.NamespacedName, e *entry, waits func(Holder) bool) (lifted bool) {
	p, was := b.undecided.of[key]
	c, attached := b.classes[e.classOrEmpty()]
	// A member is seen and selected by an attached class (recount keeps
	// it so as observations and classes change).
	is := e != nil && e.member && e.initial && !e.decided && !e.accepted && attached &&
		!waits(Holder{Class: e.class, Key: key})
	switch {
	case is && was && p == c.Priority:
		return false
	case was:
		delete(b.undecided.of, key)
		b.undecided.count[p]--
		if b.undecided.count[p] == 0 {
			delete(b.undecided.count, p)
			lifted = true
		}
	}
	if is {
		b.undecided.of[key] = c.Priority
		b.undecided.count[c.Priority]++
	}
	return lifted
}

// classOrEmpty is e's class, or "" for no entry.
func (e *entry) classOrEmpty() string {
	if e == nil {
		return ""
	}
	return e.class
}

// decided records that key's class decided it: it no longer holds
// lower priorities back.
func (b *books) decided(key types.NamespacedName, waits func(Holder) bool) (lifted bool) {
	e := b.slices[key]
	if e == nil {
		return false
	}
	e.decided = true
	return b.track(key, e, waits)
}

// retrackAll recomputes every slice's place among the undecided,
// after the attached classes changed.
func (b *books) retrackAll(waits func(Holder) bool) (lifted bool) {
	for key := range b.undecided.of {
		if _, ok := b.slices[key]; !ok {
			lifted = b.track(key, nil, waits) || lifted
		}
	}
	for key, e := range b.slices {
		lifted = b.track(key, e, waits) || lifted
	}
	return lifted
}
