package ledger

import (
	corev1 "k8s.io/api/core/v1"
)

// Metering: what each consumer holds, told as it changes.
//
// The books keep, per consumer, what its slices count (byConsumer); a
// meter is told that sum, and what the consumer's running ShadowPods are
// charged, each time either changes, at the moment the books change (an
// observation, an assumption, a forgetting). So a meter that integrates
// over time needs no sampling: every change closes an interval.

// Meter is told what one consumer of the ledger's budget holds (held: what
// its slices count, the larger of grant and Quota and what its pods use,
// writes in flight included, as the books count it) and what its slices'
// running ShadowPods are charged (inUse), for the resources the budget
// limits, each time either changes; nil or empty lists when it holds
// nothing. It is called under the ledger's lock: it must be quick, must
// not keep the lists (they are the books' own) and must not call the
// ledger.
type Meter interface {
	Consumer(consumer string, held, inUse corev1.ResourceList)
}

// meterHook is the books' link to a Meter: it keeps what each slice adds
// to its consumer's in-use sum (the books keep none by consumer), and what
// it last told of each consumer, so that the meter hears only of changes.
type meterHook struct {
	m Meter
	// inUse is what each counted entry's pods add to its consumer's
	// in-use sum, with that consumer.
	inUse map[*entry]meteredUse
	// inUseBy is the in-use sum by consumer.
	inUseBy map[string]corev1.ResourceList
	// told is what the meter was last told each consumer holds.
	told map[string]corev1.ResourceList
}

type meteredUse struct {
	consumer string
	use      corev1.ResourceList
}

// SetMeter makes the ledger tell m what each consumer holds as it changes
// (nil: tell no one). m is first told what each consumer holds now; a
// meter it replaces is told that each holds nothing. Setting the meter it
// has already does nothing.
func (l *Ledger) SetMeter(m Meter) {
	l.lock()
	defer l.unlock()
	b := &l.books
	old := b.meter
	if old != nil && old.m == m {
		return
	}
	if old != nil {
		for c := range old.told {
			old.m.Consumer(c, nil, nil)
		}
	}
	b.meter = nil
	if m == nil {
		return
	}
	h := &meterHook{m: m, inUse: map[*entry]meteredUse{}, inUseBy: map[string]corev1.ResourceList{}, told: map[string]corev1.ResourceList{}}
	b.meter = h
	for _, e := range b.slices {
		h.account(b, e)
	}
}

// account brings what the meter knows of e's consumer up to date, after
// the books changed what e counts (account, in books.go). Nothing happens
// without a meter.
func (h *meterHook) account(b *books, e *entry) {
	if h == nil {
		return
	}
	var use corev1.ResourceList
	if len(e.counted) > 0 && !allZero(e.inUse) {
		use = e.inUse
	}
	old, had := h.inUse[e]
	usesChanged := (had || use != nil) && (old.consumer != e.consumer || !equalLists(old.use, use))
	if usesChanged {
		if had {
			h.addUse(old.consumer, old.use, false)
			delete(h.inUse, e)
			if old.consumer != e.consumer {
				h.tell(b, old.consumer)
			}
		}
		if use != nil {
			h.inUse[e] = meteredUse{consumer: e.consumer, use: use.DeepCopy()}
			h.addUse(e.consumer, use, true)
		}
	}
	if usesChanged || !equalLists(h.told[e.consumer], b.byConsumer[e.consumer]) {
		h.tell(b, e.consumer)
	}
}

// addUse adds (or takes away) use to consumer's in-use sum.
func (h *meterHook) addUse(consumer string, use corev1.ResourceList, plus bool) {
	sum := h.inUseBy[consumer]
	if sum == nil {
		sum = corev1.ResourceList{}
		h.inUseBy[consumer] = sum
	}
	for n, q := range use {
		if plus {
			add(sum, n, q)
		} else {
			sub(sum, n, q)
		}
	}
	if allZero(sum) {
		delete(h.inUseBy, consumer)
	}
}

// tell tells the meter what consumer holds and uses now, unless it holds
// and uses nothing and the meter was told so already.
func (h *meterHook) tell(b *books, consumer string) {
	held, use := b.byConsumer[consumer], h.inUseBy[consumer]
	if _, was := h.told[consumer]; held == nil && use == nil {
		if !was {
			return
		}
		delete(h.told, consumer)
	} else {
		h.told[consumer] = held.DeepCopy() // present, even when nil
	}
	h.m.Consumer(consumer, limitedOnly(b.names, held), limitedOnly(b.names, use))
}

// limitedOnly is rl with only the resources names (the budget limits); rl
// itself when it names no other. A slice counts whatever it asks (pods,
// say), but a budget meters only what it limits.
func limitedOnly(names []corev1.ResourceName, rl corev1.ResourceList) corev1.ResourceList {
	keep := 0
	for _, n := range names {
		if _, ok := rl[n]; ok {
			keep++
		}
	}
	if keep == len(rl) {
		return rl
	}
	out := make(corev1.ResourceList, keep)
	for _, n := range names {
		if q, ok := rl[n]; ok {
			out[n] = q
		}
	}
	return out
}
