package resourceslice

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Metric names. controller-runtime already exports reconcile counts, errors
// and durations per controller ("resourceslice-<class>"); these add what it
// lacks.
const (
	metricDecisions       = "sliceclass_decisions_total"
	metricHandlerDuration = "sliceclass_handler_duration_seconds"
	metricHandlerErrors   = "sliceclass_handler_errors_total"
	// metricBudgetTotal is a budget's capacity, by budget and resource.
	metricBudgetTotal = "sliceclass_budget_total"
	// metricBudgetUsed is what a budget's admitted slices hold (writes in
	// flight included), by budget and resource.
	metricBudgetUsed = "sliceclass_budget_used"
	// metricGaveUp counts slices WithMaxRetries stopped retrying, by class.
	metricGaveUp = "sliceclass_handler_gave_up_total"
	// metricWatchPasses counts WithWatch passes over a class's slices.
	metricWatchPasses = "sliceclass_watch_passes_total"
	// metricBudgetExhausted counts decisions written Denied with reason
	// BudgetExhausted, and Accepted slices kept from a larger offer for
	// lack of budget, by class.
	metricBudgetExhausted = "sliceclass_budget_exhausted_total"
	// metricConsumerLimited counts decisions written Denied with reason
	// ConsumerLimitReached, and Accepted slices kept from a larger offer by
	// their consumer's limit, by class.
	metricConsumerLimited = "sliceclass_budget_consumer_limited_total"
	// metricBudgetUnavailable counts decisions written Denied with reason
	// BudgetUnavailable, and Accepted slices kept from a larger offer by a
	// budget that admits nothing new (its SliceBudget missing or refused,
	// its node pool unreadable), by class.
	metricBudgetUnavailable = "sliceclass_budget_unavailable_total"
	// metricBudgetWaiting is how many slices wait for a budget's capacity,
	// by budget.
	metricBudgetWaiting = "sliceclass_budget_waiting"
	// metricBudgetInUse is what the running ShadowPods of a budget's slices
	// use, by budget and resource.
	metricBudgetInUse = "sliceclass_budget_in_use"
	// metricBudgetReclaiming is what slices yielding capacity still hold
	// beyond what they keep (their pods still use it), by budget and
	// resource.
	metricBudgetReclaiming = "sliceclass_budget_reclaiming"
	// metricBudgetReclaimed counts victims' Reclaimed writes, by class.
	metricBudgetReclaimed = "sliceclass_budget_reclaimed_total"
	// metricBudgetOverGrant is how much those pods use beyond their
	// slices' grants, by budget and resource.
	metricBudgetOverGrant = "sliceclass_budget_over_grant"
	// metricBudgetConsumerLimit is each consumer's own limit in a budget
	// (Budget.SetConsumerLimit), by budget, consumer and resource: the
	// consumer values come from the operator's calls, and a series goes
	// with its override.
	metricBudgetConsumerLimit = "sliceclass_budget_consumer_limit"
	// metricBudgetBorrowed is what a cohort member's slices hold beyond
	// its total, borrowed from the cohort, by budget and resource.
	metricBudgetBorrowed = "sliceclass_budget_borrowed"
	// metricBudgetLent is what the other members' slices hold of a cohort
	// member's total, by budget and resource.
	metricBudgetLent = "sliceclass_budget_lent"
)

// Outcome and error-kind label values.
const (
	outcomeAccepted = "accepted"
	outcomeDenied   = "denied"

	errKindError    = "error"
	errKindPanic    = "panic"
	errKindContract = "contract"
	errKindTimeout  = "timeout"
	errKindRelease  = "release"

	outcomeDryRunAccepted = "dryrun-accepted"
	outcomeDryRunDenied   = "dryrun-denied"
)

type metrics struct {
	reg             prometheus.Registerer
	exhausted       *prometheus.CounterVec
	consumerLimited *prometheus.CounterVec
	unavailable     *prometheus.CounterVec
	reclaimed       *prometheus.CounterVec
	gaveUp          *prometheus.CounterVec
	passes          *prometheus.CounterVec
	decisions       *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	errors          *prometheus.CounterVec
}

// newMetrics registers the collectors on reg, or reuses the ones already
// there, so that every class of a process shares one set.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricDecisions,
		Help: "Decision transitions written to ResourceSlices, by class and outcome (accepted, denied; dryrun-accepted, dryrun-denied with WithDryRun).",
	}, []string{"class", "outcome"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    metricHandlerDuration,
		Help:    "Time spent in the class handler per call, by class.",
		Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5},
	}, []string{"class"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricHandlerErrors,
		Help: "Handler calls that failed, by class and kind (error, panic, timeout, contract, release).",
	}, []string{"class", "kind"})

	exhausted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricBudgetExhausted,
		Help: "Decisions written Denied for lack of budget (reason BudgetExhausted), by class.",
	}, []string{"class"})

	var err error
	m := &metrics{reg: reg}
	m.exhausted, err = register(reg, exhausted)
	if err != nil {
		return nil, err
	}
	m.consumerLimited, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricConsumerLimited,
		Help: "Decisions written Denied because the consumer reached its limit in a budget (reason ConsumerLimitReached), by class.",
	}, []string{"class"}))
	if err != nil {
		return nil, err
	}
	m.unavailable, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricBudgetUnavailable,
		Help: "Decisions written Denied, or Accepted slices kept from a larger offer, because a budget admits nothing new (reason BudgetUnavailable: its SliceBudget missing or refused, its node pool unreadable), by class.",
	}, []string{"class"}))
	if err != nil {
		return nil, err
	}
	m.reclaimed, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricBudgetReclaimed,
		Help: "Slices written Accepted with a smaller offer because a higher priority reclaimed capacity (reason Reclaimed), by class.",
	}, []string{"class"}))
	if err != nil {
		return nil, err
	}
	m.gaveUp, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricGaveUp,
		Help: "Slices the controller stopped retrying after WithMaxRetries consecutive handler failures, by class.",
	}, []string{"class"}))
	if err != nil {
		return nil, err
	}
	m.passes, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricWatchPasses,
		Help: "Passes over a class's slices triggered by WithWatch inputs, by class.",
	}, []string{"class"}))
	if err != nil {
		return nil, err
	}
	m.decisions, err = register(reg, decisions)
	if err != nil {
		return nil, err
	}
	m.duration, err = register(reg, duration)
	if err != nil {
		return nil, err
	}
	m.errors, err = register(reg, errs)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		var zero T
		return zero, fmt.Errorf("registering sliceclass metrics: %w", err)
	}
	return c, nil
}

// registerBudget exports b's total, usage and waiting line, read at scrape
// time. One collector per budget name and registry serves every instance of
// that name, and reports the live one: the most recent instance some class
// still draws from (else the most recent). A budget created anew under an
// existing name (a class's budget changed in a classes file) takes over as
// soon as it is registered, and the old one's figures never come back once
// no class draws from it: never a stale total.
func (m *metrics) registerBudget(b *budget.Budget) (*budgetCollector, error) {
	name := b.Name()
	c := &budgetCollector{
		total:   prometheus.NewDesc(metricBudgetTotal, "Capacity of a budget, by resource.", []string{"resource"}, prometheus.Labels{"budget": name}),
		used:    prometheus.NewDesc(metricBudgetUsed, "What a budget's admitted slices hold, by resource.", []string{"resource"}, prometheus.Labels{"budget": name}),
		waiting: prometheus.NewDesc(metricBudgetWaiting, "Slices waiting for a budget's capacity.", nil, prometheus.Labels{"budget": name}),
		inUse:   prometheus.NewDesc(metricBudgetInUse, "What the running pods of a budget's slices use, by resource.", []string{"resource"}, prometheus.Labels{"budget": name}),
		over:    prometheus.NewDesc(metricBudgetOverGrant, "What the running pods of a budget's slices use beyond their grants, by resource.", []string{"resource"}, prometheus.Labels{"budget": name}),
		reclaiming: prometheus.NewDesc(metricBudgetReclaiming, "Capacity a budget's slices granted away but still use (their pods still run), by resource.",
			[]string{"resource"}, prometheus.Labels{"budget": name}),
		borrowed: prometheus.NewDesc(metricBudgetBorrowed, "What a cohort member's slices hold beyond its total, borrowed from the cohort, by resource.",
			[]string{"resource"}, prometheus.Labels{"budget": name}),
		lent: prometheus.NewDesc(metricBudgetLent, "What other cohort members' slices hold of a budget's total, by resource.",
			[]string{"resource"}, prometheus.Labels{"budget": name}),
		consumerLimit: prometheus.NewDesc(metricBudgetConsumerLimit,
			"A consumer's own limit in a budget (Budget.SetConsumerLimit, overriding WithConsumerLimit), by consumer and resource.",
			[]string{"consumer", "resource"}, prometheus.Labels{"budget": name}),
	}
	c.add(b)
	err := m.reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c, nil
	case !errors.As(err, &are):
		return nil, fmt.Errorf("registering budget %q's metrics: %w", name, err)
	}
	old, ok := are.ExistingCollector.(*budgetCollector)
	if !ok {
		return nil, fmt.Errorf("registering budget %q's metrics: another collector has the same metrics: %w", name, err)
	}
	old.add(b)
	return old, nil
}

// budgetCollector exports the budgets of one name.
type budgetCollector struct {
	total, used, waiting, inUse, over, reclaiming, borrowed, lent, consumerLimit *prometheus.Desc

	mu sync.Mutex
	bs []*budget.Budget // in registration order
	// refs counts the registrations of each budget of bs.
	refs map[*budget.Budget]int
}

// add registers b as the newest instance of the name.
func (c *budgetCollector) add(b *budget.Budget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.bs {
		if x == b {
			c.bs = append(c.bs[:i], c.bs[i+1:]...)
			break
		}
	}
	c.bs = append(c.bs, b)
	if c.refs == nil {
		c.refs = map[*budget.Budget]int{}
	}
	c.refs[b]++
}

// remove gives back a registration of b: once no class exports b, the
// collector forgets it, and a collector left with no budget exports no
// series (it stays registered, for the next budget of its name), so that
// the series follow the live budgets exactly and budgets replaced many
// times leave nothing behind.
func (c *budgetCollector) remove(b *budget.Budget) (empty bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs[b]--; c.refs[b] <= 0 {
		delete(c.refs, b)
		for i, x := range c.bs {
			if x == b {
				c.bs = append(c.bs[:i], c.bs[i+1:]...)
				break
			}
		}
	}
	return len(c.bs) == 0
}

// live is the instance to report: the newest one drawn from, else the
// newest.
func (c *budgetCollector) live() *budget.Budget {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.bs) - 1; i >= 0; i-- {
		if ledger.Of(c.bs[i]).Attached() > 0 {
			return c.bs[i]
		}
	}
	if len(c.bs) == 0 {
		return nil
	}
	return c.bs[len(c.bs)-1]
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.total
	ch <- c.used
	ch <- c.waiting
	ch <- c.inUse
	ch <- c.over
	ch <- c.reclaiming
	ch <- c.borrowed
	ch <- c.lent
	ch <- c.consumerLimit
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.live()
	if b == nil {
		return
	}
	emit := func(d *prometheus.Desc, rl corev1.ResourceList) {
		for name, q := range rl {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, q.AsApproximateFloat64(), string(name))
		}
	}
	emit(c.total, b.Total())
	emit(c.used, b.Used())
	emit(c.inUse, ledger.Of(b).InUseTotal())
	emit(c.over, ledger.Of(b).OverGrant())
	emit(c.reclaiming, ledger.Of(b).Reclaiming())
	// A budget in no cohort borrows and lends nothing: no series.
	if snap := ledger.Of(b).Snapshot(); snap.Cohort != "" {
		emit(c.borrowed, snap.Borrowed)
		emit(c.lent, snap.Lent)
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(ledger.Of(b).WaitingCount()))
	for consumer, rl := range ledger.Of(b).ConsumerLimits() {
		for name, q := range rl {
			ch <- prometheus.MustNewConstMetric(c.consumerLimit, prometheus.GaugeValue, q.AsApproximateFloat64(), consumer, string(name))
		}
	}
}
