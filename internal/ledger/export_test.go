package ledger

import "k8s.io/apimachinery/pkg/types"

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
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.slices[key]
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
