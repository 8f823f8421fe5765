package cohorts

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

var (
	mu sync.Mutex
	// byManager is what each manager that serves a budget holds here,
	// until it stops.
	byManager = map[manager.Manager]*served{}
)

// served is one manager's cohorts and the budgets it serves.
type served struct {
	cohorts *ledger.Cohorts
	ledgers map[*ledger.Ledger]struct{}
}

// Join records that mgr serves l and gives l mgr's cohorts
// (ledger.SetCohorts): from then on l is a member of the cohort its name
// says (ledger.SetCohortName), among the budgets mgr serves. It returns
// an error for a manager that cannot be a map key or that stopped already
// (nothing could remove its entry).
func Join(mgr manager.Manager, l *ledger.Ledger) error {
	if mgr == nil {
		return fmt.Errorf("cohorts: nil manager")
	}
	if t := reflect.TypeOf(mgr); !t.Comparable() {
		return fmt.Errorf("cohorts: the manager's type %s cannot be compared: pass a pointer", t)
	}
	mu.Lock()
	s := byManager[mgr]
	if s == nil {
		// mu is held across Add: a runnable added to a manager that runs
		// starts at once, and its Start takes mu only once the manager
		// stops.
		if err := mgr.Add(forget{mgr}); err != nil {
			mu.Unlock()
			return fmt.Errorf("adding the manager's cohorts to it: %w", err)
		}
		s = &served{cohorts: ledger.NewCohorts(), ledgers: map[*ledger.Ledger]struct{}{}}
		byManager[mgr] = s
	}
	s.ledgers[l] = struct{}{}
	cs := s.cohorts
	mu.Unlock()
	l.SetCohorts(cs) // outside mu: it takes the ledgers' locks
	return nil
}

// Leave records that mgr no longer serves l, which leaves its cohort.
func Leave(mgr manager.Manager, l *ledger.Ledger) {
	if mgr != nil && reflect.TypeOf(mgr).Comparable() {
		mu.Lock()
		if s := byManager[mgr]; s != nil {
			delete(s.ledgers, l)
		}
		mu.Unlock()
	}
	l.SetCohorts(nil)
}

// Members returns the budgets mgr serves that are members of the cohort
// named name now (ledger.Ledger.Cohort), sorted by name; none for "".
func Members(mgr manager.Manager, name string) []*ledger.Ledger {
	if name == "" || mgr == nil || !reflect.TypeOf(mgr).Comparable() {
		return nil
	}
	mu.Lock()
	var all []*ledger.Ledger
	if s := byManager[mgr]; s != nil {
		all = make([]*ledger.Ledger, 0, len(s.ledgers))
		for l := range s.ledgers {
			all = append(all, l)
		}
	}
	mu.Unlock()
	var out []*ledger.Ledger
	for _, l := range all { // outside mu: Cohort takes the ledger's lock
		if l.Cohort() == name {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b *ledger.Ledger) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// size is how many managers have cohorts now.
func size() int {
	mu.Lock()
	defer mu.Unlock()
	return len(byManager)
}

// forget removes its manager's entry when the manager stops, on every
// replica (the cohorts are the manager's, elected or not).
type forget struct{ mgr manager.Manager }

// Start implements manager.Runnable.
func (f forget) Start(ctx context.Context) error {
	<-ctx.Done()
	mu.Lock()
	defer mu.Unlock()
	delete(byManager, f.mgr)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (forget) NeedLeaderElection() bool { return false }
