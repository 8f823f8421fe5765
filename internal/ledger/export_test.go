package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What the tests read of an attempt's state; the SDK itself asks Ahead and
// SettleRead.

// AwaitsOwnWrite reports whether an applied write to the slice was
// computed from resourceVersion rv: a cache still showing rv has not seen
// that write, and deciding from it would decide twice.
func (l *Ledger) AwaitsOwnWrite(key types.NamespacedName, rv string) bool {
	return l.hasAttempt(key, rv, Applied)
}

// Unsettled reports whether a write to the slice computed from rv ended
// with no answer that says whether it was applied.
func (l *Ledger) Unsettled(key types.NamespacedName, rv string) bool {
	return l.hasAttempt(key, rv, Unknown) || l.hasAttempt(key, rv, Lost)
}

func (l *Ledger) hasAttempt(key types.NamespacedName, rv string, o Outcome) bool {
	l.lock()
	defer l.unlock()
	e := l.books.slices[key]
	if e == nil {
		return false
	}
	for _, a := range e.attempts {
		if a.done && a.outcome == o && a.base == rv {
			return true
		}
	}
	return false
}

// Admit and Check are one-ledger shorthands of AdmitAll and CheckAll that
// only tests use: the SDK admits through AdmitAll and CheckAll.

// Admit assumes an acceptance of offer for h, decided from the slice at
// resourceVersion base; it is AdmitAll over this ledger alone, for a
// consumer that is not limited. It returns the attempt to end with Done,
// or nil and a message naming what is short.
func (l *Ledger) Admit(h Holder, base string, created time.Time, offer corev1.ResourceList) (*Attempt, string) {
	var consumer string
	l.lock()
	if e := l.books.slices[h.Key]; e != nil {
		consumer = e.consumer
	}
	l.unlock()
	as, refusal := AdmitAll([]*Ledger{l}, Request{Holder: h, Base: base, Created: created, Consumer: consumer, Offer: offer})
	if refusal != nil {
		return nil, refusal.Message
	}
	return as[0], ""
}

// Check answers what Admit would, without assuming anything or joining
// the line: a dry run consults the budget but does not charge it.
func (l *Ledger) Check(h Holder, offer corev1.ResourceList) (bool, string) {
	var consumer string
	l.lock()
	if e := l.books.slices[h.Key]; e != nil {
		consumer = e.consumer
	}
	l.unlock()
	if refusal := CheckAll([]*Ledger{l}, Request{Holder: h, Consumer: consumer, Offer: offer}); refusal != nil {
		return false, refusal.Message
	}
	return true, ""
}

// PromisedConsumers is how many consumers the line remembers a promise
// for.
func (l *Ledger) PromisedConsumers() int {
	l.lock()
	defer l.unlock()
	return len(l.line.promisedBy)
}

// PlanNow is what decide (decide.go) answers on the ledger's domain as it
// stands: each waiter's decision ("admit", "reclaiming", or "wait:" and
// its reason) by slice name, and what each capped slice keeps, in cpu, by
// name. It changes nothing: it shows what the loop of issue 50 would do.
func (l *Ledger) PlanNow() (decisions, caps map[string]string) {
	l.lock()
	f, ws := l.frameLocked()
	l.unlock()
	p := decide(f, ws)
	decisions, caps = map[string]string{}, map[string]string{}
	for h, d := range p.decisions {
		switch {
		case d.kind == decideAdmit:
			decisions[h.Key.Name] = "admit"
		case d.reclaiming:
			decisions[h.Key.Name] = "reclaiming"
		default:
			decisions[h.Key.Name] = "wait:" + d.block.reason
		}
	}
	for k, c := range p.caps {
		q := c.keep[corev1.ResourceCPU]
		caps[k.Name] = q.String()
	}
	return decisions, caps
}
