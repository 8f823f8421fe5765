package metering

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkHeapPerConsumerSeries measures the live heap a leading Meter
// keeps for each consumer of one budget that holds and uses cpu and memory
// (granted and in use, per resource): it reports B/consumer-resource (one
// consumer's one resource: its two gauges and two counters) and
// B/exported-series (that over the four series a scrape exports for it).
// The live heap is read after a GC before the consumers are told and after,
// so that only what the meter keeps counts; the consumers' IDs are made
// before (the books own those strings, the meter only keys on them). Each
// size is measured b.N times and averaged:
//
//	go test -run '^$' -bench HeapPerConsumerSeries -benchtime 5x ./internal/metering/
func BenchmarkHeapPerConsumerSeries(b *testing.B) {
	held := list("cpu", "4", "memory", "8Gi")
	inUse := list("cpu", "1500m", "memory", "3Gi")
	const exported = 4 // granted, in use, and their two counters
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("consumers=%d", n), func(b *testing.B) {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("tenant-%05d-cluster-id", i)
			}
			var grew float64
			runs := 0
			for b.Loop() {
				before := liveHeap()
				m := New(nil)
				m.lead(1)
				gold := m.Budget("gold", "ledger")
				for _, id := range ids {
					gold.Consumer(id, held, inUse)
				}
				after := liveHeap()
				if got := metered(m); got != n*len(held) {
					b.Fatalf("the meter keeps %d consumer series, want %d consumers × %d resources", got, n, len(held))
				}
				runtime.KeepAlive(m)
				grew += float64(after) - float64(before)
				runs++
			}
			perSeries := grew / float64(runs) / float64(n*len(held))
			b.ReportMetric(perSeries, "B/consumer-resource")
			b.ReportMetric(perSeries/exported, "B/exported-series")
		})
	}
}

// liveHeap is the heap's live bytes after a GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// metered counts m's consumer series: one per consumer and resource.
func metered(m *Meter) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.consumers {
		n += len(c.res)
	}
	return n
}
