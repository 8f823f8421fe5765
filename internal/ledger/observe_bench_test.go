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
