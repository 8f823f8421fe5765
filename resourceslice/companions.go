package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/feed"
	"github.com/sliceclass/sliceclass/internal/metering"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// What a set of classes shares, in one object the set holds: the classes
// it serves (claims), its status.class view and its ShadowPod watch (one
// for all the budgets its classes draw from). A ClassSet holds its own; an
// AddToManager class, a set of one, holds one of its own too. Nothing
// finds it again through the manager: the user holds the set, and passes
// it where it is needed (ClassSet.Serve, the harness's setupWithManager).
// What a budget holds (its feed) hangs off the budget (internal/feed);
// namespaces and slices come from the manager's own cache; the cohorts
// its budgets meet in are the manager's, whichever set serves them
// (internal/cohorts).
//
// It is a runnable of the manager, which empties it when the manager
// stops: the set outlives its manager only as long as the user holds it,
// and holds nothing then.

// companions is one set's shared state; see above.
type companions struct {
	mgr manager.Manager
	// pods is the set's ShadowPod watch, shared by its budgets' feeds.
	pods *feed.Pods

	mu sync.Mutex
	// claims are the classes the set serves: a class registered twice in
	// one set is refused, with no API call. Another set of the manager
	// naming the class meets controller-runtime's controller-name check.
	claims map[string]bool
	// named are the classes whose controller name the set has registered
	// with controller-runtime's name check: serving one again after Stop
	// does not ask again (the name is the set's).
	named map[string]bool
	// views is the status.class view, built on first use.
	views *sliceview.Classes
	// stopped is set when the manager stopped: nothing is kept any more.
	stopped bool
	// metered are the meters whose leader runnable the set added to its
	// manager (see lead).
	metered map[*metering.Meter]bool
}

var _ manager.Runnable = &companions{}

// newCompanions makes a set's shared state in mgr, and adds its runnables.
func newCompanions(mgr manager.Manager) (*companions, error) {
	pods, err := feed.NewPods(mgr)
	if err != nil {
		return nil, err
	}
	mc := &companions{mgr: mgr, pods: pods, claims: map[string]bool{}, named: map[string]bool{}}
	if err := mgr.Add(mc); err != nil {
		return nil, fmt.Errorf("adding the classes' shared state to the manager: %w", err)
	}
	return mc, nil
}

// Start implements manager.Runnable: when the manager stops, the
// companions let go of the status.class view (it stopped with the
// manager). Claims and feeds are given back by their classes as each
// stops, once its decisions have returned.
func (mc *companions) Start(ctx context.Context) error {
	<-ctx.Done()
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.stopped = true
	mc.views = nil
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the state
// is the manager's, on every replica.
func (*companions) NeedLeaderElection() bool { return false }

// size is how many things the companions hold: the claims and the
// status.class view.
func (mc *companions) size() int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	n := len(mc.claims)
	if mc.views != nil {
		n++
	}
	return n
}

// claim records that the set serves class.
func (mc *companions) claim(class string) error {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.claims[class] {
		return fmt.Errorf("class %q: %w", class, ErrClassRegistered)
	}
	mc.claims[class] = true
	return nil
}

func (mc *companions) unclaim(class string) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	delete(mc.claims, class)
}

// nameTaken reports whether the set registered class's controller name
// with controller-runtime already; setNamed records that it has.
func (mc *companions) nameTaken(class string) bool {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.named[class]
}

func (mc *companions) setNamed(class string) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.named[class] = true
}

// lead adds m's leader runnable to the set's manager, once: m counts and
// exports while the manager is elected.
func (mc *companions) lead(m *metering.Meter) error {
	if m == nil {
		return nil
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.metered[m] {
		return nil
	}
	if err := mc.mgr.Add(m.Leader()); err != nil {
		return fmt.Errorf("adding the consumer meter to the manager: %w", err)
	}
	if mc.metered == nil {
		mc.metered = map[*metering.Meter]bool{}
	}
	mc.metered[m] = true
	return nil
}

// statusClasses returns the set's status.class view, built on first use.
func (mc *companions) statusClasses() (*sliceview.Classes, error) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.views != nil {
		return mc.views, nil
	}
	if mc.stopped {
		return nil, errors.New("the manager stopped")
	}
	v, err := sliceview.NewClasses(mc.mgr)
	if err != nil {
		return nil, err
	}
	mc.views = v
	return v, nil
}
