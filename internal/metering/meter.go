package metering

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Metric names: the contract (budget, consumer and resource
// labels on each).
const (
	MetricGranted        = "sliceclass_consumer_granted"
	MetricInUse          = "sliceclass_consumer_in_use"
	MetricGrantedSeconds = "sliceclass_consumer_granted_seconds_total"
	MetricInUseSeconds   = "sliceclass_consumer_in_use_seconds_total"
)

// Linger is how long a consumer's series stay once it holds and uses
// nothing in a budget: twice Prometheus' staleness window, so that its
// counters' final value is scraped for minutes after its last use (see the
// package comment).
const Linger = 10 * time.Minute

// Meter integrates what consumers hold over time and exports it; see the
// package comment. It is a prometheus.Collector. Safe for concurrent use.
type Meter struct {
	now                                          func() time.Time
	granted, inUse, grantedSeconds, inUseSeconds *prometheus.Desc

	mu sync.Mutex
	// leaders counts the elected managers whose Leader runnable runs: the
	// counters advance and series are exported only while it is above 0.
	leaders int
	// sources is the current source of each budget name.
	sources map[string]*Source
	// consumers are the metered consumers, by budget and consumer.
	consumers map[consumerKey]*consumer
}

type consumerKey struct{ budget, consumer string }

// consumer is one consumer's series in one budget, by resource.
type consumer struct {
	res map[corev1.ResourceName]*series
	// idleSince is when it last came to hold and use nothing; zero while
	// it holds or uses something.
	idleSince time.Time
}

// series is one resource of one consumer: the gauges, and their integrals
// up to since (the last change, or the last change of leadership).
type series struct {
	held, inUse               float64
	heldSeconds, inUseSeconds float64
	since                     time.Time
}

// New returns a Meter reading the time from now (time.Now when nil).
func New(now func() time.Time) *Meter {
	if now == nil {
		now = time.Now
	}
	labels := []string{"budget", "consumer", "resource"}
	return &Meter{
		now: now,
		granted: prometheus.NewDesc(MetricGranted,
			"What a consumer's slices hold in a budget now (the larger of grant and Quota, as the budget counts it), by resource; exported by the leader.", labels, nil),
		inUse: prometheus.NewDesc(MetricInUse,
			"What a consumer's running ShadowPods are charged in a budget now, by resource; exported by the leader.", labels, nil),
		grantedSeconds: prometheus.NewDesc(MetricGrantedSeconds,
			"sliceclass_consumer_granted integrated over time while this process leads, in the resource's base unit times seconds (cpu: core-seconds, memory: byte-seconds).", labels, nil),
		inUseSeconds: prometheus.NewDesc(MetricInUseSeconds,
			"sliceclass_consumer_in_use integrated over time while this process leads, in the resource's base unit times seconds (cpu: core-seconds, memory: byte-seconds).", labels, nil),
		sources:   map[string]*Source{},
		consumers: map[consumerKey]*consumer{},
	}
}

// Source is what one budget's ledger tells the meter: a ledger.Meter.
type Source struct {
	m      *Meter
	budget string
	holder any
}

var _ ledger.Meter = (*Source)(nil)

// Budget returns the source the budget named name reports through, for
// holder (its ledger). A budget of that name held by another holder is
// replaced: its consumers' series fall to zero now (what they held is
// counted up to now) and what the old holder tells from then on is
// ignored, so two budgets of one name (one replacing the other) never
// count one consumer twice. The same holder gets the same source again.
func (m *Meter) Budget(name string, holder any) *Source {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sources[name]; s != nil && s.holder == holder {
		return s
	}
	now := m.now()
	for k := range m.consumers {
		if k.budget == name {
			m.setLocked(k, nil, nil, now)
		}
	}
	s := &Source{m: m, budget: name, holder: holder}
	m.sources[name] = s
	return s
}

// Consumer implements ledger.Meter: consumer now holds held and uses
// inUse in the source's budget.
func (s *Source) Consumer(consumer string, held, inUse corev1.ResourceList) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sources[s.budget] != s {
		return // replaced by another budget of its name
	}
	m.setLocked(consumerKey{s.budget, consumer}, held, inUse, m.now())
}

// setLocked records that k holds held and uses inUse from now on, closing
// the interval of what it held before.
func (m *Meter) setLocked(k consumerKey, held, inUse corev1.ResourceList, now time.Time) {
	c := m.consumers[k]
	if c == nil {
		if allZero(held) && allZero(inUse) {
			return
		}
		c = &consumer{res: map[corev1.ResourceName]*series{}}
		m.consumers[k] = c
	}
	for n, s := range c.res {
		m.advance(s, now)
		s.held, s.inUse = value(held[n]), value(inUse[n])
	}
	for _, rl := range []corev1.ResourceList{held, inUse} {
		for n := range rl {
			if c.res[n] == nil {
				c.res[n] = &series{held: value(held[n]), inUse: value(inUse[n]), since: now}
			}
		}
	}
	idle := true
	for _, s := range c.res {
		if s.held != 0 || s.inUse != 0 {
			idle = false
			break
		}
	}
	switch {
	case !idle:
		c.idleSince = time.Time{}
	case c.idleSince.IsZero():
		c.idleSince = now
	}
}

// advance closes s's open interval at now: while a leader runs, what it
// held and used then is added to its integrals.
func (m *Meter) advance(s *series, now time.Time) {
	if d := now.Sub(s.since).Seconds(); m.leaders > 0 && d > 0 {
		s.heldSeconds += s.held * d
		s.inUseSeconds += s.inUse * d
	}
	s.since = now
}

// lead records a manager elected (+1) or stopped (-1): every open
// interval is closed first under what was true until now.
func (m *Meter) lead(d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for _, c := range m.consumers {
		for _, s := range c.res {
			m.advance(s, now)
		}
	}
	m.leaders += d
}

// Leader returns the runnable that makes the meter count and export while
// its manager is elected: add it to each manager whose budgets report to
// the meter (once per manager).
func (m *Meter) Leader() manager.Runnable { return leader{m} }

type leader struct{ m *Meter }

// Start implements manager.Runnable: the meter leads until ctx ends.
func (r leader) Start(ctx context.Context) error {
	r.m.lead(1)
	<-ctx.Done()
	r.m.lead(-1)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: it starts
// once the manager is elected.
func (leader) NeedLeaderElection() bool { return true }

// Describe implements prometheus.Collector.
func (m *Meter) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.granted
	ch <- m.inUse
	ch <- m.grantedSeconds
	ch <- m.inUseSeconds
}

// Collect implements prometheus.Collector: the gauges, and the counters
// up to now (the open interval added, not recorded). Consumers idle for
// Linger are forgotten first; nothing is exported unless the meter leads.
func (m *Meter) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for k, c := range m.consumers {
		if !c.idleSince.IsZero() && now.Sub(c.idleSince) >= Linger {
			delete(m.consumers, k)
		}
	}
	if m.leaders == 0 {
		return
	}
	for k, c := range m.consumers {
		for n, s := range c.res {
			held, inUse := s.heldSeconds, s.inUseSeconds
			if d := now.Sub(s.since).Seconds(); d > 0 {
				held += s.held * d
				inUse += s.inUse * d
			}
			labels := []string{k.budget, k.consumer, string(n)}
			ch <- prometheus.MustNewConstMetric(m.granted, prometheus.GaugeValue, s.held, labels...)
			ch <- prometheus.MustNewConstMetric(m.inUse, prometheus.GaugeValue, s.inUse, labels...)
			ch <- prometheus.MustNewConstMetric(m.grantedSeconds, prometheus.CounterValue, held, labels...)
			ch <- prometheus.MustNewConstMetric(m.inUseSeconds, prometheus.CounterValue, inUse, labels...)
		}
	}
}

// value is q in its base unit: exact for whole numbers, to the milli-unit
// otherwise (cpu 500m is 0.5).
func value(q resource.Quantity) float64 {
	if v, ok := q.AsInt64(); ok {
		return float64(v)
	}
	return float64(q.MilliValue()) / 1000
}

func allZero(rl corev1.ResourceList) bool {
	for _, q := range rl {
		if !q.IsZero() {
			return false
		}
	}
	return true
}
