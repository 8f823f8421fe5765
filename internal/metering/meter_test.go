package metering

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/testwait"
)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// scrape gathers m as Prometheus would, by "metric budget/consumer/resource".
func scrape(t *testing.T, m *Meter) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			v := mt.GetGauge().GetValue()
			if mt.GetCounter() != nil {
				v = mt.GetCounter().GetValue()
			}
			out[fmt.Sprintf("%s %s/%s/%s", mf.GetName(), l["budget"], l["consumer"], l["resource"])] = v
		}
	}
	return out
}

// leading returns a meter on c's clock that leads, as if its manager were
// elected.
func leading(c *clock) *Meter {
	m := New(c.now)
	m.lead(1)
	return m
}

// Each change closes the interval the previous value held, and a scrape
// adds the open interval without recording it: the counters are exact at
// every scrape, in base units times seconds.
func TestCountersIntegrateExactly(t *testing.T) {
	c := newClock()
	m := leading(c)
	gold := m.Budget("gold", "ledger-1")
	gold.Consumer("acme", list("cpu", "2", "memory", "1Gi"), list("cpu", "500m"))
	c.step(10 * time.Second)
	gold.Consumer("acme", list("cpu", "4", "memory", "1Gi"), list("cpu", "1500m"))
	c.step(5 * time.Second)

	got := scrape(t, m)
	assert.Equal(t, map[string]float64{
		"sliceclass_consumer_granted gold/acme/cpu":                  4,
		"sliceclass_consumer_granted gold/acme/memory":               1 << 30,
		"sliceclass_consumer_in_use gold/acme/cpu":                   1.5,
		"sliceclass_consumer_in_use gold/acme/memory":                0,
		"sliceclass_consumer_granted_seconds_total gold/acme/cpu":    2*10 + 4*5,
		"sliceclass_consumer_granted_seconds_total gold/acme/memory": 15 * (1 << 30),
		"sliceclass_consumer_in_use_seconds_total gold/acme/cpu":     0.5*10 + 1.5*5,
		"sliceclass_consumer_in_use_seconds_total gold/acme/memory":  0,
	}, got)
	assert.Equal(t, got, scrape(t, m), "a scrape changes nothing: the same moment, the same values")

	c.step(250 * time.Millisecond)
	gold.Consumer("acme", nil, nil)
	c.step(5 * time.Minute)
	got = scrape(t, m)
	assert.InDelta(t, 40+4*0.25, got["sliceclass_consumer_granted_seconds_total gold/acme/cpu"], 1e-9,
		"a quarter second counted to the millisecond; nothing after it holds nothing")
	assert.Zero(t, got["sliceclass_consumer_granted gold/acme/cpu"])
}

// Only a leader counts and exports: a meter whose manager is not elected
// (a standby) exports nothing, and the time before election or after the
// manager stops is not counted.
func TestOnlyTheLeaderCountsAndExports(t *testing.T) {
	c := newClock()
	m := New(c.now)
	r := m.Leader()
	le, ok := r.(manager.LeaderElectionRunnable)
	require.True(t, ok)
	assert.True(t, le.NeedLeaderElection(), "started by the manager once elected")

	m.Budget("gold", "l").Consumer("acme", list("cpu", "2"), nil)
	c.step(time.Minute)
	assert.Empty(t, scrape(t, m), "a standby exports no series")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	require.Eventually(t, func() bool { return len(scrape(t, m)) > 0 }, testwait.Timeout, 10*time.Millisecond, "elected: exported")
	c.step(3 * time.Second)
	assert.Equal(t, 6.0, scrape(t, m)["sliceclass_consumer_granted_seconds_total gold/acme/cpu"], "counted from the election only")

	cancel()
	require.NoError(t, <-done)
	c.step(time.Minute)
	assert.Empty(t, scrape(t, m), "stopped: no series")
	m.lead(1)
	assert.Equal(t, 6.0, scrape(t, m)["sliceclass_consumer_granted_seconds_total gold/acme/cpu"], "nothing counted while not leading")
}

// A consumer's series go Linger after it last held and used nothing, not
// before; one that holds something again within Linger keeps its counters.
func TestIdleConsumersSeriesGoAfterLinger(t *testing.T) {
	c := newClock()
	m := leading(c)
	gold := m.Budget("gold", "l")
	gold.Consumer("acme", list("cpu", "2"), nil)
	gold.Consumer("bravo", list("cpu", "1"), nil)
	c.step(10 * time.Second)
	gold.Consumer("acme", nil, nil)
	gold.Consumer("bravo", nil, nil)
	c.step(Linger - time.Second)
	gold.Consumer("bravo", list("cpu", "1"), nil)
	got := scrape(t, m)
	assert.Equal(t, 20.0, got["sliceclass_consumer_granted_seconds_total gold/acme/cpu"], "still there, with its final value")

	c.step(time.Second)
	got = scrape(t, m)
	_, there := got["sliceclass_consumer_granted_seconds_total gold/acme/cpu"]
	assert.False(t, there, "gone Linger after it held nothing")
	assert.Equal(t, 10.0+1, got["sliceclass_consumer_granted_seconds_total gold/bravo/cpu"], "held again in time: its counter goes on")

	gold.Consumer("acme", list("cpu", "1"), nil)
	c.step(time.Second)
	assert.Equal(t, 1.0, scrape(t, m)["sliceclass_consumer_granted_seconds_total gold/acme/cpu"], "back after it went: a new series from zero")
	gold.Consumer("never", nil, nil)
	_, there = scrape(t, m)["sliceclass_consumer_granted gold/never/cpu"]
	assert.False(t, there, "a consumer that never held anything has no series")
}

// A budget of a name taken over by another (a budget replaced under its
// name): the old one's consumers fall to zero when the new one takes over,
// and what the old one tells afterwards is ignored.
func TestBudgetReplacedUnderItsName(t *testing.T) {
	c := newClock()
	m := leading(c)
	old := m.Budget("gold", "ledger-1")
	assert.Same(t, old, m.Budget("gold", "ledger-1"), "the same holder: the same source")
	old.Consumer("acme", list("cpu", "2"), nil)
	c.step(10 * time.Second)
	nu := m.Budget("gold", "ledger-2")
	c.step(10 * time.Second)
	old.Consumer("acme", list("cpu", "8"), nil)
	c.step(10 * time.Second)
	got := scrape(t, m)
	assert.Equal(t, 20.0, got["sliceclass_consumer_granted_seconds_total gold/acme/cpu"])
	assert.Zero(t, got["sliceclass_consumer_granted gold/acme/cpu"])
	nu.Consumer("acme", list("cpu", "3"), nil)
	c.step(time.Second)
	assert.Equal(t, 23.0, scrape(t, m)["sliceclass_consumer_granted_seconds_total gold/acme/cpu"], "one series, one counter")
}

// A restart starts the counters at zero; increase() over the restart, as
// Prometheus computes it (a drop is a reset: the value after it counts
// from zero), gives the total held across both processes.
func TestIncreaseAcrossARestart(t *testing.T) {
	c := newClock()
	const series = "sliceclass_consumer_granted_seconds_total gold/acme/cpu"
	var samples []float64
	first := leading(c)
	first.Budget("gold", "l").Consumer("acme", list("cpu", "2"), nil)
	samples = append(samples, scrape(t, first)[series])
	for range 3 {
		c.step(15 * time.Second)
		samples = append(samples, scrape(t, first)[series])
	}
	// The process stops; 10 s later the new one counts the same slices.
	c.step(10 * time.Second)
	second := leading(c)
	second.Budget("gold", "l").Consumer("acme", list("cpu", "2"), nil)
	for range 2 {
		c.step(15 * time.Second)
		samples = append(samples, scrape(t, second)[series])
	}
	assert.Equal(t, []float64{0, 30, 60, 90, 30, 60}, samples, "reset at the restart")
	assert.Equal(t, 2.0*(45+30), increase(samples), "each process's time held; the 10 s between them is not counted")
}

// increase is Prometheus' increase() over samples without extrapolation:
// the sum of the rises, where a drop is a reset and the value after it is
// its rise from zero.
func increase(samples []float64) float64 {
	var sum float64
	for i := 1; i < len(samples); i++ {
		if d := samples[i] - samples[i-1]; d >= 0 {
			sum += d
		} else {
			sum += samples[i]
		}
	}
	return sum
}
