package resourceslice

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sliceclass/sliceclass/testing/envkit"
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
	envkit.Eventually(t, "a burst to be one pass", func() bool { return ran.Load() == 1 })
	envkit.Consistently(t, 3*p.coalesce, "no second pass without a new request", func() bool { return ran.Load() == 1 })

	p.request()
	cancel()
	<-done
	envkit.Consistently(t, 3*p.coalesce, "a pass asked for as the class stops never runs", func() bool { return ran.Load() == 1 })
}
