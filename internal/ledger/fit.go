package ledger

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// The fit check: whether a request fits one ledger now, and if not, why,
// in words a slice's condition can carry. It reads the books and the line
// once (room), then judges from what it read alone.

// room is what a request for one slice is measured against in one ledger,
// read from the books and the line under the ledger's lock.
type room struct {
	budget string
	// closed is why the ledger admits nothing new ("" when open).
	closed string
	names  []corev1.ResourceName
	total  corev1.ResourceList
	// ceiling is the most its slices may count, in a cohort (its total
	// and what it may borrow); nil outside one, where it is total.
	ceiling corev1.ResourceList
	// mine is what the slice grows from (books.growsFrom); free is total
	// − used (negative where the total fell below it); held is what the
	// slice's consumer counts and limit what it may hold.
	mine, free, held, limit corev1.ResourceList
	// heldBack is how many undecided slices of higher priority hold the
	// slice's growth back (see undecided.go).
	heldBack int
	// others is what is promised to the consumer's other waiters; spare
	// is free less what is promised to every other waiter, nPromised to
	// how many.
	others, spare corev1.ResourceList
	nPromised     int
}

// roomLocked reads what r is measured against in l.
func (l *Ledger) roomLocked(r Request) room {
	rm := room{budget: l.name, closed: l.closed, names: l.books.names, total: l.books.total, limit: l.limitLocked(r.Consumer),
		mine: l.books.growsFrom(r.Key), free: l.freeLocked(), held: l.books.byConsumer[r.Consumer],
		heldBack: l.heldBackLocked(r.Priority)}
	// A slice given back what was taken for a waiter grows from what it
	// counts (books.growsFrom) only while its domain affords that: where
	// its member holds more than it may (its lender left the cohort, the
	// totals shrank), what it counts beyond its offer is not its own, and
	// it grows from its offer. Otherwise a borrower whose lender left
	// mid-reclaim was granted all its pods still used back, and held the
	// leaving lender's capacity for ever (issue 50, scenario 5).
	if e := l.books.slices[r.Key]; e != nil && e.reclaimed && e.givenBack {
		for _, q := range rm.free {
			if q.Sign() < 0 {
				rm.mine = e.offered()
				break
			}
		}
	}
	// What is promised to the consumer's other waiters is theirs: a newer
	// slice must not take an older one's place under the limit.
	rm.others = l.line.promisedToOthers(r.Consumer, r.Holder)
	if l.cohort != nil {
		rm.ceiling = corev1.ResourceList{}
		for _, n := range l.books.names {
			rm.ceiling[n] = l.ceilingLocked(n)
		}
	}
	if l.line.nPromise > 0 { // spare is read only when others hold promises
		rm.spare, rm.nPromised = l.line.spare(rm.free.DeepCopy(), r.Holder)
	}
	return rm
}

// fitLocked says why r does not fit l: ReasonUnavailable when the ledger
// is closed, ReasonExhausted with a message naming what is short,
// ReasonConsumerLimit, or "" when it fits.
func (l *Ledger) fitLocked(r Request) verdict {
	return l.roomLocked(r).fit(r)
}

// verdict is what the fit check answers for one request in one ledger:
// why it does not fit ("" when it does), in a message naming the short
// resources; and what it asks beyond what its slice grows from.
//
// A waiting slice's condition carries the message, and the ledger wakes a
// waiter to rewrite it whenever it changes (refresh): so a message names
// what blocks the slice in kind (the reason, the budget or limit, the
// short resources, what would have to change) with stable figures only
// (the slice's own ask and holding, a limit's or total's configured
// value), never figures that move with other slices (what is free, used,
// promised, or what other slices hold). Those live in the budget's status
// and metrics; in a message they would rewrite every waiter at each change
// of any slice (issue 42).
type verdict struct {
	reason, msg string
	short       []string
	increase    corev1.ResourceList
}

// fit is fitLocked's judgment over the room it read.
func (rm room) fit(r Request) verdict {
	grow := rm.increase(r.Offer)
	no := func(reason, msg string, short []string) verdict {
		return verdict{reason: reason, msg: msg, short: short, increase: grow}
	}
	if rm.closed != "" && len(grow) > 0 {
		return no(ReasonUnavailable, "budget "+rm.budget+" is unavailable: "+rm.closed, sortedKeys(grow))
	}
	consumerShort := consumerShort(rm.limit, rm.held, r.Offer, rm.mine, rm.others)
	if short := shortfall(rm.names, r.Offer, rm.free, rm.mine); len(short) > 0 {
		return no(ReasonExhausted, rm.message(short)+rm.fitsOnlyIf(r, consumerShort), shortNames(short))
	}
	if len(consumerShort) > 0 {
		return no(ReasonConsumerLimit, consumerShort.message(rm.budget, r.Consumer)+rm.totalNote(r), consumerShort.names())
	}
	if rm.nPromised > 0 {
		// Free, but promised to other waiting slices: not free for this
		// one. The message is the same as for capacity in use, so that
		// promises made and kept do not rewrite every waiter.
		if short := shortfall(rm.names, r.Offer, rm.spare, rm.mine); len(short) > 0 {
			return no(ReasonExhausted, rm.message(short), shortNames(short))
		}
	}
	if rm.heldBack > 0 && len(grow) > 0 {
		return no(ReasonExhausted, fmt.Sprintf("budget %s: waits for the slices of priority above %d to be decided first (a new leader learns what they were promised only as they are decided)",
			rm.budget, r.Priority), sortedKeys(grow))
	}
	return verdict{increase: grow}
}

// increase is what offer asks beyond what the slice grows from: the
// positive differences only.
func (rm room) increase(offer corev1.ResourceList) corev1.ResourceList {
	return increaseOver(rm.names, rm.mine, offer)
}

// increaseLocked is what offer asks beyond what the slice key grows from.
func (l *Ledger) increaseLocked(key types.NamespacedName, offer corev1.ResourceList) corev1.ResourceList {
	return increaseOver(l.books.names, l.books.growsFrom(key), offer)
}

// increaseOver is what offer asks beyond mine, of the resources names:
// the positive differences only.
func increaseOver(names []corev1.ResourceName, mine, offer corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		want, ok := offer[n]
		if !ok {
			continue
		}
		if m, ok := mine[n]; ok {
			want = want.DeepCopy()
			want.Sub(m)
		}
		if want.Sign() > 0 {
			out[n] = want
		}
	}
	return out
}

// sortedKeys are the names of rl, sorted.
func sortedKeys(rl corev1.ResourceList) []string {
	out := make([]string, 0, len(rl))
	for _, n := range slices.Sorted(maps.Keys(rl)) {
		out = append(out, string(n))
	}
	return out
}

// fitsOnlyIf says what would have to change for r to fit, where capacity
// freeing in the budget is not enough (as Kueue's pending reasons say
// "request > maximum capacity"): an offer beyond the budget's total,
// beyond its consumer's limit, or one its consumer's other slices keep
// over that limit (consumerShort, when the budget's shortfall is what the
// message names first). "" when freed capacity alone would do.
func (rm room) fitsOnlyIf(r Request, consumerShort limitShort) string {
	notes := rm.totalNotes(r)
	over := map[string]bool{}
	for _, n := range consumerShort.names() {
		over[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(rm.limit)) {
		want, asked := r.Offer[n]
		lim := rm.limit[n]
		switch {
		case !asked:
		case want.Cmp(lim) > 0:
			notes = append(notes, fmt.Sprintf("%s: asked %s, more than consumer %q's limit %s: it fits only if that limit is raised", n, want.String(), r.Consumer, lim.String()))
		case over[string(n)]:
			// Within the limit alone, but not beside what the consumer's
			// other slices hold or are promised.
			notes = append(notes, fmt.Sprintf("%s: consumer %q would go over its limit %s with what its other slices hold or are promised: it fits only if they release capacity or its limit is raised",
				n, r.Consumer, lim.String()))
		}
	}
	return parenthesised(notes)
}

// totalNote is fitsOnlyIf's note on an offer beyond the budget's total,
// in parentheses ("" when none is).
func (rm room) totalNote(r Request) string { return parenthesised(rm.totalNotes(r)) }

// totalNotes says, for each resource r asks more of than the budget's
// total, that it fits only if the total grows.
func (rm room) totalNotes(r Request) []string {
	var notes []string
	for _, n := range rm.names {
		want, asked := r.Offer[n]
		if rm.ceiling != nil {
			if ceil := rm.ceiling[n]; asked && want.Cmp(ceil) > 0 {
				notes = append(notes, fmt.Sprintf("%s: asked %s, more than the budget may hold in its cohort, %s: it fits only if its total, its borrowing limit or what the cohort lends grows",
					n, want.String(), ceil.String()))
			}
			continue
		}
		if total := rm.total[n]; asked && want.Cmp(total) > 0 {
			notes = append(notes, fmt.Sprintf("%s: asked %s, more than the budget's total %s: it fits only if the total grows", n, want.String(), total.String()))
		}
	}
	return notes
}

// parenthesised joins notes into " (a; b)", or "" for none.
func parenthesised(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// limitShort is what takes a consumer over its limit, one entry per
// resource, sorted by name.
type limitShort []limitLine

// limitLine is one resource of a limitShort: what was asked, the limit,
// and whether the ask alone is beyond it (else it is what the consumer's
// other slices hold or are promised that leaves too little).
type limitLine struct {
	name       corev1.ResourceName
	want, lim  resource.Quantity
	aloneAbove bool
}

// names are the resources' names.
func (ls limitShort) names() []string {
	out := make([]string, len(ls))
	for i, x := range ls {
		out[i] = string(x.name)
	}
	return out
}

// message says why consumer is refused in budget, with stable figures
// only (the ask and the limit; what its other slices hold or are promised
// moves), and what would have to change:
//
//	budget pool: consumer "acme" would go over its limit beside what its other slices hold or are promised: cpu: asked 4, limit 4 (it fits only if they release capacity or its limit is raised)
//	budget pool: consumer "acme" would go over its limit: cpu: asked 6, more than its limit 4 (it fits only if that limit is raised)
func (ls limitShort) message(budget, consumer string) string {
	beside := false
	lines := make([]string, len(ls))
	for i, x := range ls {
		if x.aloneAbove {
			lines[i] = fmt.Sprintf("%s: asked %s, more than its limit %s", x.name, x.want.String(), x.lim.String())
			continue
		}
		beside = true
		lines[i] = fmt.Sprintf("%s: asked %s, limit %s", x.name, x.want.String(), x.lim.String())
	}
	if !beside {
		return fmt.Sprintf("budget %s: consumer %q would go over its limit: %s (it fits only if that limit is raised)", budget, consumer, strings.Join(lines, "; "))
	}
	return fmt.Sprintf("budget %s: consumer %q would go over its limit beside what its other slices hold or are promised: %s (it fits only if they release capacity or its limit is raised)",
		budget, consumer, strings.Join(lines, "; "))
}

// consumerShort lists what takes a consumer holding held over its limit if
// one of its slices, growing from mine, is granted offer (and extra is set
// aside for it besides); nil when the consumer is not limited or it fits.
// As for the budget's total, only an increase over mine must fit: an offer
// that asks no more than the slice grows from takes nothing, and is never
// refused, even from a consumer above its limit (a reclaimed slice whose
// Quota and pods still hold more than its smaller offer).
func consumerShort(limit, held, offer, mine, extra corev1.ResourceList) limitShort {
	if len(limit) == 0 {
		return nil
	}
	var short limitShort
	for _, n := range slices.Sorted(maps.Keys(limit)) {
		want, asked := offer[n]
		if !asked {
			continue
		}
		m, holds := mine[n]
		if holds && want.Cmp(m) <= 0 {
			continue
		}
		after := held[n].DeepCopy()
		after.Add(want)
		after.Sub(m)
		after.Add(extra[n])
		if lim := limit[n]; after.Cmp(lim) > 0 {
			short = append(short, limitLine{name: n, want: want, lim: lim, aloneAbove: want.Cmp(lim) > 0})
		}
	}
	return short
}

// message names the budget and what is short.
func (rm room) message(short []string) string {
	return "budget " + rm.budget + ": " + strings.Join(short, "; ")
}

// shortfall lists, for each limited resource, why offer does not fit free
// for a slice that counts mine now: only the increase over mine must fit,
// so an acceptance the budget already counts is never revoked by a smaller
// total. A line names the ask, what the slice holds, and how much must be
// free for it: not what is free now, which moves with every other slice.
func shortfall(names []corev1.ResourceName, offer, free, mine corev1.ResourceList) []string {
	var short []string
	for _, n := range names {
		want, asked := offer[n]
		if !asked {
			continue
		}
		m, holds := mine[n]
		need := want.DeepCopy()
		if holds {
			if want.Cmp(m) <= 0 {
				continue
			}
			need.Sub(m)
		}
		if f := free[n]; need.Cmp(f) <= 0 {
			continue
		}
		if holds && m.Sign() > 0 {
			short = append(short, fmt.Sprintf("%s: asked %s, holds %s, waits until %s more is free", n, want.String(), m.String(), need.String()))
		} else {
			short = append(short, fmt.Sprintf("%s: asked %s, waits until %s is free", n, want.String(), need.String()))
		}
	}
	sort.Strings(short)
	return short
}

// shortNames are the resource names of shortfall lines ("cpu: asked ...").
func shortNames(short []string) []string {
	out := make([]string, len(short))
	for i, s := range short {
		out[i], _, _ = strings.Cut(s, ":")
	}
	return out
}

// limitLocked is what consumer may hold: its own limit, else the budget's.
func (l *Ledger) limitLocked(consumer string) corev1.ResourceList {
	if lim, ok := l.limits[consumer]; ok {
		return lim
	}
	return l.opts.ConsumerLimit
}

// blockLocked is what blocks waiter w now: the reason and message
// fitLocked gives, and which resources reclaimed for it are still in use.
func (l *Ledger) blockLocked(w *waiter) (reason, msg string) {
	v := l.fitLocked(Request{Holder: w.Holder, Consumer: w.consumer, Created: w.created, Offer: w.offer, Priority: w.priority})
	reason, msg = v.reason, v.msg
	if reason != "" && w.reclaiming {
		msg += l.reclaimWait(w.Holder)
	}
	return reason, msg
}

// reclaimWait says, for a waiter being reclaimed for, which resources
// reclaimed for it its victims' pods still use: their names, not the
// amounts, which fall as each pod ends (they are the budget's
// status.reclaiming and the sliceclass_budget_reclaiming metric).
func (l *Ledger) reclaimWait(h Holder) string {
	pending := l.pendingLocked(h) // positive amounts only
	if l.cohort != nil {
		for n, q := range l.cohortPendingLocked(h) {
			add(pending, n, q)
		}
	}
	if len(pending) == 0 {
		return ""
	}
	return "; waiting for reclaimed capacity still in use: " + strings.Join(sortedKeys(pending), ", ")
}
