package cohorts

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

var (
	mu sync.Mutex
	// byManager are the cohorts of each manager that has a budget served,
	// until it stops.
	byManager = map[manager.Manager]*ledger.Cohorts{}
)

// Of returns mgr's cohorts, made on first use, when the first budget mgr
// serves is bound to it. It returns an error for a manager that cannot
// be a map key or that stopped already (it cannot remove the entry).
func Of(mgr manager.Manager) (*ledger.Cohorts, error) {
	if mgr == nil {
		return nil, fmt.Errorf("cohorts: nil manager")
	}
	if t := reflect.TypeOf(mgr); !t.Comparable() {
		return nil, fmt.Errorf("cohorts: the manager's type %s cannot be compared: pass a pointer", t)
	}
	mu.Lock()
	defer mu.Unlock()
	if cs := byManager[mgr]; cs != nil {
		return cs, nil
	}
	// mu is held across Add: a runnable added to a manager that runs
	// starts at once, and its Start, which takes mu when the manager
	// stops, returns only then.
	if err := mgr.Add(forget{mgr}); err != nil {
		return nil, fmt.Errorf("adding the manager's cohorts to it: %w", err)
	}
	cs := ledger.NewCohorts()
	byManager[mgr] = cs
	return cs, nil
}

// Members returns the sorted names of the budgets mgr serves in the
// cohort named name, none when it serves none there (or name is "").
func Members(mgr manager.Manager, name string) []string {
	if name == "" || mgr == nil || !reflect.TypeOf(mgr).Comparable() {
		return nil
	}
	mu.Lock()
	cs := byManager[mgr]
	mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Members(name)
}

// size is how many managers have cohorts now.
func size() int {
	mu.Lock()
	defer mu.Unlock()
	return len(byManager)
}

// forget removes its manager's cohorts when the manager stops, on every
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
