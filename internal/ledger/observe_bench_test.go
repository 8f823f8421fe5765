package ledger_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// BenchmarkObserveSlice measures what the budget feed pays per watch event
// of a slice the ledger counts (a new resourceVersion, the same grant), with
// 1000 slices held and 100 waiting: the cost of one observation on the
// controller's hot path.
func BenchmarkObserveSlice(b *testing.B) {
	const held, waiting = 1000, 100
	l, _ := newLedger(b, cpu("100000"))
	for i := range held {
		l.ObserveSlice(slice(fmt.Sprintf("h%04d", i), "1", cpu("1")))
	}
	for i := range waiting {
		if as, _ := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: gold(fmt.Sprintf("w%04d", i)),
			Created: at(i), Offer: cpu("200000")}); as != nil {
			b.Fatal("a waiter fits")
		}
	}
	obs := make([]ledger.Slice, b.N)
	for i := range obs {
		obs[i] = slice(fmt.Sprintf("h%04d", i%held), strconv.Itoa(2+i/held), cpu("1"))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l.ObserveSlice(obs[i])
	}
}

// BenchmarkReclaimVictims measures one refused admission of a high
// priority that reclaims from 10,000 Accepted slices of a lower one (the
// victim search walks every slice of the budget), then gives the capacity
// back so that the next iteration reclaims again.
func BenchmarkReclaimVictims(b *testing.B) {
	const held = 10000
	l, err := ledger.New("pool", cpu("10000"), ledger.Options{Preemption: true})
	if err != nil {
		b.Fatal(err)
	}
	w := &wakes{}
	if err := l.Attach("spot", ledger.Class{Wake: w.wake}); err != nil {
		b.Fatal(err)
	}
	if err := l.Attach("gold", ledger.Class{Wake: w.wake, Priority: 100}); err != nil {
		b.Fatal(err)
	}
	for i := range held {
		l.ObserveSlice(slice(fmt.Sprintf("s%05d", i), "1", cpu("1"), inClass("spot"), consumer(fmt.Sprintf("c%d", i%100)),
			func(s *ledger.Slice) { s.Created = at(i) }))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		h := ledger.Holder{Class: "gold", Key: key(fmt.Sprintf("g%d", i))}
		if as, _ := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: h, Created: at(held + i), Consumer: "gold",
			Offer: cpu("3"), Priority: 100}); as != nil {
			b.Fatal("admitted on a full budget")
		}
		l.Leave(h) // lifts the caps
	}
}
