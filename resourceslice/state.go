package resourceslice

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/metering"
)

// classState is what a class's reconciler remembers between reconciles and
// what it holds while it serves the class: its metrics, its place in its
// budgets, its queue, and the memories of release hooks owed, failures,
// passes, unwritten decisions, over-grants and tenants. It is made once per
// class, with its reconciler.
type classState struct {
	class   string
	metrics *metrics
	// conflicts spaces out quiet retries after a write conflict.
	conflicts workqueue.TypedRateLimiter[reconcile.Request]
	// ledgers are the admission ledgers of the class's budgets, in
	// WithBudget's order; none without WithBudget.
	ledgers []*ledger.Ledger
	// exported are the budgets whose metrics the class exports; detach
	// gives them back once.
	exported   []exported
	detachOnce sync.Once
	// meter meters what each consumer holds in the class's budgets (nil
	// without WithBudget, or with metering compiled out).
	meter *metering.Meter
	// seeded: without a feed, the ledger was told once what the client
	// lists (see observe).
	seedMu sync.Mutex
	seeded bool
	// queue receives slices the SDK enqueues itself (budget re-admissions,
	// WithWatch passes, inventory sweeps); set when the controller starts.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
	// queueReady is closed once queue is set.
	queueReady chan struct{}
	readyOnce  sync.Once
	// releases, retries and passes are what the reconciler remembers
	// between reconciles: what release hooks are owed, which failing slices
	// it gave up on, and the WithWatch passes asked for.
	releases *releases
	retries  *retries
	passes   *passes
	// memos keeps decisions whose write did not go through (one handler
	// call per decision).
	memos *memos
	// overGrants remembers the over-grant each slice was last warned of.
	overGrants *notes
	// tenants is what the tenant rule reads, fed by the Tenant source.
	tenants *tenantIndex
}

// exported is a budget whose metrics a class exports, and their
// collector.
type exported struct {
	b *budget.Budget
	c *budgetCollector
}

// newClassState registers the class's metrics and attaches it to its
// budgets' ledgers; detach gives both back.
func newClassState(class string, cfg *config) (*classState, error) {
	m, err := newMetrics(cfg.registerer)
	if err != nil {
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	st := &classState{
		class:      class,
		metrics:    m,
		conflicts:  workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](cfg.backoffBase, cfg.backoffMax),
		releases:   newReleases(),
		tenants:    newTenantIndex(),
		memos:      newMemos(),
		overGrants: &notes{m: map[noteKey]string{}},
		retries:    newRetries(cfg.maxRetries, cfg.resync),
		passes:     newPasses(),
		queueReady: make(chan struct{}),
	}
	if len(cfg.budgets) > 0 && metering.Enabled {
		if st.meter, err = register(cfg.registerer, metering.New(nil)); err != nil {
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
	}
	for _, b := range cfg.budgets {
		c, err := m.registerBudget(b)
		if err != nil {
			st.detach()
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		st.exported = append(st.exported, exported{b: b, c: c})
		l := ledger.Of(b)
		if err := l.Attach(class, ledger.Class{Wake: st.wake, Selector: cfg.selector, Priority: cfg.priority}); err != nil {
			st.detach()
			return nil, err
		}
		st.ledgers = append(st.ledgers, l)
		if st.meter != nil {
			l.SetMeter(st.meter.Budget(b.Name(), l))
		}
	}
	return st, nil
}

// detach stops the class drawing from its budgets, and its exporting
// their metrics.
func (st *classState) detach() {
	for _, l := range st.ledgers {
		l.Detach(st.class)
	}
	st.detachOnce.Do(func() {
		for _, e := range st.exported {
			e.c.remove(e.b)
		}
	})
}

// wake enqueues a slice the budget re-admits; before the controller starts
// there is nothing waiting to wake.
func (st *classState) wake(key types.NamespacedName) { st.enqueue(key) }

func (st *classState) enqueue(key types.NamespacedName) {
	if q := st.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: key})
	}
}

// ownSource is the source through which the reconciler enqueues slices
// itself: a budget's re-admissions when capacity frees, WithWatch passes,
// inventory sweeps.
func (st *classState) ownSource() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		st.queue.Store(&q)
		st.readyOnce.Do(func() { close(st.queueReady) })
		return nil
	})
}
