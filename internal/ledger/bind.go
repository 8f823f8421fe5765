package ledger

import (
	"errors"
	"fmt"
	"sync"
)

// ErrBoundElsewhere is returned by Bind: a budget's classes run in one manager at a time, and
// this budget is bound to another that has not stopped.
var ErrBoundElsewhere = errors.New("the budget is bound to another manager, which has not stopped: " +
	"a budget counts the slices of one manager's classes (build one budget per manager)")

// binding is the manager a budget is bound to and what the budget holds
// there: its feed, its caches and the runnables that start them, built by
// the first class that draws from it in that manager. Its lock is its own:
// building the parts may call the ledger.
type binding struct {
	mu    sync.Mutex
	owner any
	parts any
}

// Bind returns what the budget holds in owner (the manager its classes run
// in), built by build on first use. The budget is bound to owner from then
// on, until Unbind(owner) (the manager stopped): binding it to another
// owner meanwhile is ErrBoundElsewhere.
func (l *Ledger) Bind(owner any, build func() (any, error)) (any, error) {
	b := &l.binding
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner != nil {
		if b.owner != owner {
			return nil, fmt.Errorf("budget %q: %w", l.name, ErrBoundElsewhere)
		}
		return b.parts, nil
	}
	parts, err := build()
	if err != nil {
		return nil, err
	}
	b.owner, b.parts = owner, parts
	return parts, nil
}

// Unbind lets the budget go from owner, once owner stopped: the next Bind
// may bind it to another. It does nothing when the budget is bound to
// another owner, or to none.
func (l *Ledger) Unbind(owner any) {
	b := &l.binding
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner == owner {
		b.owner, b.parts = nil, nil
	}
}
