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
		mine: l.books.growsFrom(r.Key), free: l.books.free(), held: l.books.byConsumer[r.Consumer],
		heldBack: l.books.heldBack(r.Priority)}
	// What is promised to the consumer's other waiters is theirs: a newer
	// slice must not take an older one's place under the limit.
	rm.others = l.line.promisedToOthers(r.Consumer, r.Holder)
	if l.line.nPromise > 0 { // spare is read only when others hold promises
		rm.spare, rm.nPromised = l.line.spare(rm.free.DeepCopy(), r.Holder)
	}
	return rm
}

// fitLocked says why r does not fit l: ReasonExhausted with a message
// naming what is short (and how many other waiting slices the free capacity
// is promised to, when that is what keeps it), ReasonConsumerLimit, or ""
// when it fits.
func (l *Ledger) fitLocked(r Request) verdict {
	return l.roomLocked(r).fit(r)
}

// verdict is what the fit check answers for one request in one ledger:
// why it does not fit ("" when it does), in a message naming the short
// resources; and what it asks beyond what its slice grows from.
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
		return no(ReasonExhausted, "budget "+rm.budget+": "+rm.closed, sortedKeys(grow))
	}
	consumerShort := consumerShort(rm.limit, rm.held, r.Offer, rm.mine, rm.others)
	if short := shortfall(rm.names, r.Offer, rm.free, rm.mine); len(short) > 0 {
		return no(ReasonExhausted, rm.message(short, false)+rm.fitsOnlyIf(r, consumerShort), shortNames(short))
	}
	if len(consumerShort) > 0 {
		return no(ReasonConsumerLimit, fmt.Sprintf("budget %s: consumer %q is at its limit: %s", rm.budget, r.Consumer, strings.Join(consumerShort, "; "))+
			rm.fitsOnlyIf(r, nil), shortNames(consumerShort))
	}
	if rm.nPromised > 0 {
		if short := shortfall(rm.names, r.Offer, rm.spare, rm.mine); len(short) > 0 {
			return no(ReasonExhausted, rm.message(short, true), shortNames(short))
		}
	}
	if rm.heldBack > 0 && len(grow) > 0 {
		return no(ReasonExhausted, fmt.Sprintf("budget %s: waits for %d slice(s) of priority above %d to be decided first (a new leader learns what they were promised only as they are decided)",
			rm.budget, rm.heldBack, r.Priority), sortedKeys(grow))
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
// beyond its consumer's limit, or one its consumer's other holdings keep
// over that limit (consumerShort, when the budget's shortfall is what the
// message names first). "" when freed capacity alone would do.
func (rm room) fitsOnlyIf(r Request, consumerShort []string) string {
	var notes []string
	for _, n := range rm.names {
		want, asked := r.Offer[n]
		if total := rm.total[n]; asked && want.Cmp(total) > 0 {
			notes = append(notes, fmt.Sprintf("%s: asked %s, more than the budget's total %s: it fits only if the total grows", n, want.String(), total.String()))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(rm.limit)) {
		want, asked := r.Offer[n]
		lim := rm.limit[n]
		if !asked {
			continue
		}
		if want.Cmp(lim) > 0 {
			notes = append(notes, fmt.Sprintf("%s: asked %s, more than consumer %q's limit %s: it fits only if that limit is raised", n, want.String(), r.Consumer, lim.String()))
			continue
		}
		if len(consumerShort) == 0 {
			continue
		}
		// Within the limit alone, but not beside what the consumer holds.
		after := rm.held[n].DeepCopy()
		after.Add(want)
		if m, ok := rm.mine[n]; ok {
			after.Sub(m)
		}
		if after.Cmp(lim) > 0 {
			over := after.DeepCopy()
			over.Sub(lim)
			notes = append(notes, fmt.Sprintf("%s: consumer %q would hold %s of its limit %s: it fits only if its other slices release %s or its limit is raised",
				n, r.Consumer, after.String(), lim.String(), over.String()))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// consumerShort lists what keeps a consumer holding held within limit if
// one of its slices, growing from mine, is granted offer (and extra is set
// aside for it besides); nil when the consumer is not limited or it fits.
// As for the budget's total, only an increase over mine must fit: an offer
// that asks no more than the slice grows from takes nothing, and is never
// refused, even from a consumer above its limit (a reclaimed slice whose
// Quota and pods still hold more than its smaller offer).
func consumerShort(limit, held, offer, mine, extra corev1.ResourceList) []string {
	if len(limit) == 0 {
		return nil
	}
	var short []string
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
		if after.Cmp(limit[n]) > 0 {
			h, lim := held[n], limit[n]
			short = append(short, fmt.Sprintf("%s: asked %s, holds %s, limit %s", n, want.String(), h.String(), lim.String()))
		}
	}
	return short
}

// message names the budget and what is short. Its figures are what is
// free now, net of what is promised to other waiting slices when promised
// is set (and it says so), so that a waiter's message changes only when
// what blocks it changes, not with every promise made and kept.
func (rm room) message(short []string, promised bool) string {
	msg := "budget " + rm.budget + ": " + strings.Join(short, "; ")
	if promised {
		msg += " (after what is promised to other waiting slices)"
	}
	return msg
}

// shortfall lists, for each limited resource, why offer does not fit free
// for a slice that counts mine now: only the increase over mine must fit,
// so an acceptance the budget already counts is never revoked by a smaller
// total.
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
		f := free[n]
		if need.Cmp(f) <= 0 {
			continue
		}
		shown := f.DeepCopy()
		if shown.Sign() < 0 {
			shown = resource.Quantity{}
		}
		if holds && m.Sign() > 0 {
			short = append(short, fmt.Sprintf("%s: asked %s, holds %s, %s free", n, want.String(), m.String(), shown.String()))
		} else {
			short = append(short, fmt.Sprintf("%s: asked %s, %s free", n, want.String(), shown.String()))
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
// fitLocked gives, and what is still in use of the capacity reclaimed for
// it.
func (l *Ledger) blockLocked(w *waiter) (reason, msg string) {
	v := l.fitLocked(Request{Holder: w.Holder, Consumer: w.consumer, Created: w.created, Offer: w.offer, Priority: w.priority})
	reason, msg = v.reason, v.msg
	if reason != "" && w.reclaiming {
		msg += l.reclaimNote(w.Holder)
	}
	return reason, msg
}
