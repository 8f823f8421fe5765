package testwait

import (
	"testing"
	"time"
)

// DefaultInterval is how often a zero Poller checks its condition.
const DefaultInterval = 50 * time.Millisecond

// Poller checks a condition at a fixed interval. The zero Poller checks
// every DefaultInterval. The public kit (testing/envkit) offers its
// Eventually and Consistently only; the SDK's own tests poll slower where
// each check is expensive (a list of thousands of slices) or where a test
// measures the load it puts on the API server, and faster where a test
// catches a short-lived state.
type Poller struct {
	interval time.Duration
}

// Every returns a Poller that checks every interval.
func Every(interval time.Duration) Poller {
	return Poller{interval: interval}
}

func (p Poller) every() time.Duration {
	if p.interval <= 0 {
		return DefaultInterval
	}
	return p.interval
}

// Eventually checks cond at once and then at every tick until it holds,
// and fails the test, naming what it waited for, if it still does not after
// Timeout. cond runs on the test's goroutine.
func (p Poller) Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	p.EventuallyWithin(t, Timeout, what, cond)
}

// EventuallyWithin is Eventually with the deadline timeout instead of
// Timeout: for bulk work that takes minutes even on an idle machine (a
// multiple of Timeout), and for the kit's own tests of the time-out.
func (p Poller) EventuallyWithin(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(p.every())
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// Holds checks cond at once and then at every tick for d, and reports
// whether it held every time; it returns false at the first check that
// fails. It is a bounded wait for "nothing happens".
func (p Poller) Holds(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(p.every())
	defer tick.Stop()
	for {
		if !cond() {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		<-tick.C
	}
}

// Consistently is Holds that fails the test, naming what stopped holding
// and when, the first time cond does not hold.
func (p Poller) Consistently(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	if !p.Holds(d, cond) {
		t.Fatalf("%s: stopped holding after %s of %s", what, time.Since(start).Round(time.Millisecond), d)
	}
}
