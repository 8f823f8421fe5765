package envkit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

func TestEventually(t *testing.T) {
	cases := map[string]struct {
		reason string
		// trueAt is the call from which cond holds (0: never).
		trueAt    int
		wantFatal string
		wantCalls int
	}{
		"AtOnce": {
			reason: "a condition that already holds is checked once, with no wait",
			trueAt: 1, wantCalls: 1,
		},
		"Later": {
			reason: "the wait ends at the first check that holds",
			trueAt: 3, wantCalls: 3,
		},
		"Never": {
			reason:    "a timeout names what was awaited and for how long",
			wantFatal: "timed out after 200ms waiting for slice a Accepted",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &recorder{TB: t}
			calls := 0
			r.run(func(tb testing.TB) {
				testwait.Every(10*time.Millisecond).EventuallyWithin(tb, 200*time.Millisecond, "slice a Accepted", func() bool {
					calls++
					return tc.trueAt > 0 && calls >= tc.trueAt
				})
			})
			_, fatal := r.failures()
			assert.Equal(t, tc.wantFatal, fatal, tc.reason)
			if tc.wantCalls > 0 {
				assert.Equal(t, tc.wantCalls, calls, tc.reason)
			}
		})
	}
}

// The condition runs on the test's goroutine: a require inside it ends the
// test at once, where require.Eventually would wait out its timeout.
func TestEventuallyConditionMayFailTheTest(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	r.run(func(tb testing.TB) {
		envkit.Eventually(tb, "a read that fails", func() bool {
			require.FailNow(tb, "reading the slice: not found")
			return false
		})
	})
	_, fatal := r.failures()
	assert.Equal(t, "FailNow", fatal)
	assert.Less(t, time.Since(start), envkit.WaitTimeout, "the failure ends the wait, not WaitTimeout")
}

func TestConsistently(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	start := time.Now()
	r.run(func(tb testing.TB) {
		testwait.Every(10*time.Millisecond).Consistently(tb, time.Minute, "no second write", func() bool {
			calls++
			return calls < 3
		})
	})
	_, fatal := r.failures()
	assert.Contains(t, fatal, "no second write: stopped holding after ", "the failure names what stopped holding")
	assert.Contains(t, fatal, "of 1m0s")
	assert.Equal(t, 3, calls, "the first check that fails ends the wait")
	assert.Less(t, time.Since(start), time.Minute, "not the minute's wait")

	r = &recorder{TB: t}
	r.run(func(tb testing.TB) {
		envkit.Consistently(tb, 100*time.Millisecond, "quiet", func() bool { return true })
	})
	errs, fatal := r.failures()
	assert.Empty(t, errs)
	assert.Empty(t, fatal, "a condition that holds throughout passes")
}

func TestHolds(t *testing.T) {
	p := testwait.Every(20 * time.Millisecond)
	calls := 0
	start := time.Now()
	assert.True(t, p.Holds(100*time.Millisecond, func() bool { calls++; return true }))
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "it checks for the whole duration")
	assert.LessOrEqual(t, calls, 7, "every 20ms for 100ms, at once and once past the end")

	calls = 0
	assert.False(t, p.Holds(time.Minute, func() bool { calls++; return calls < 2 }))
	assert.Equal(t, 2, calls, "it stops at the first check that fails")
}
