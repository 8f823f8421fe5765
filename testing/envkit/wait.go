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

// Eventually checks cond every 50 ms until it holds, and fails
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
	testwait.Poller{}.Eventually(t, what, cond)
}

// Consistently checks cond every 50 ms for d and fails the test,
// naming what stopped holding, the first time it does not hold.
func Consistently(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Poller{}.Consistently(t, d, what, cond)
}
