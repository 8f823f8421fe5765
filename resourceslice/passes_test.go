package resourceslice

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The pass scheduler coalesces a burst into one pass and, bound to the
// controller's context, runs nothing once it ends (a timer that outlived
// the class would list and enqueue for a stopped controller).
func TestPassesCoalesceAndStopWithTheirContext(t *testing.T) {
	p := newPasses()
	p.coalesce = 50 * time.Millisecond
	var ran atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, func(context.Context) { ran.Add(1) })
	}()
	for range 100 {
		p.request()
	}
	assert.Eventually(t, func() bool { return ran.Load() == 1 }, 5*time.Second, 10*time.Millisecond, "a burst is one pass")
	time.Sleep(3 * p.coalesce)
	assert.Equal(t, int32(1), ran.Load(), "no second pass without a new request")

	p.request()
	cancel()
	<-done
	time.Sleep(3 * p.coalesce)
	assert.Equal(t, int32(1), ran.Load(), "a pass asked for as the class stops never runs")
}
