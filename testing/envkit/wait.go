package envkit

import (
	"testing"
	"time"

	"github.com/sliceclass/sliceclass/internal/testwait"
)

// WaitTimeout is how long Eventually waits for its condition before it
// fails the test: two minutes. A wait that normally ends in 100 ms can take
// tens of seconds on a loaded machine (a load average of 28 on 2 cores, in
// CI); past two minutes something is wrong. A wait returns as soon as its
// condition holds, so the deadline costs a passing test nothing: speed is
// for benchmarks to measure, not for a test's deadline. Use it for your own
// waits too (a context.WithTimeout around a call that waits), so that every
// wait of a test suite gives up at the same, generous, deadline.
const WaitTimeout = testwait.Timeout

// defaultInterval is how often Eventually and Consistently check, and
// what the zero Poller uses.
const defaultInterval = 50 * time.Millisecond

// Poller checks a condition at a fixed interval. The zero Poller checks
// every defaultInterval.
type Poller struct {
	interval time.Duration
}

// Every returns a Poller that checks every interval: slower than
// defaultInterval where each check is expensive (a list of thousands of
// slices) or where a test measures the load it puts on the API server.
func Every(interval time.Duration) Poller {
	return Poller{interval: interval}
}

func (p Poller) every() time.Duration {
	if p.interval <= 0 {
		return defaultInterval
	}
	return p.interval
}

// Eventually checks cond at once and then at every tick until it holds,
// and fails the test, naming what it waited for, if it still does not after
// WaitTimeout. cond runs on the test's goroutine.
func (p Poller) Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	p.eventually(t, WaitTimeout, what, cond)
}

// eventually is Eventually with the deadline timeout: envkit's own tests
// use a short one to test the time-out.
func (p Poller) eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
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

// Eventually checks cond every defaultInterval until it holds, and fails
// the test, naming what it waited for, if it still does not after
// WaitTimeout. It returns as soon as cond holds: it says that something
// happens, not how fast (that is a benchmark's job; log a duration you
// care about with t.Logf). cond may call require: it runs on the test's
// goroutine.
//
//	envkit.Eventually(t, "slice a Accepted", func() bool {
//		var rs authv1beta1.ResourceSlice
//		require.NoError(t, cp.Client.Get(ctx, key, &rs))
//		return conditions.IsAccepted(&rs)
//	})
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Poller{}.Eventually(t, what, cond)
}

// Consistently checks cond every defaultInterval for d and fails the test,
// naming what stopped holding, the first time it does not hold.
func Consistently(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	Poller{}.Consistently(t, d, what, cond)
}
