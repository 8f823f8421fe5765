package ledger_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// A snapshot counts what the status shows: accepted slices (a denied one
// that still holds its grant is not one; an admission in flight is),
// waiting slices, and each consumer's holdings and waiters, the largest
// first, zero quantities named.
func TestSnapshot(t *testing.T) {
	l, _ := newLedger(t, res("10", "10Gi"))
	l.ObserveSlice(slice("a", "1", res("2", "1Gi"), consumer("acme")))
	l.ObserveSlice(slice("g", "1", res("5", "1Gi"), consumer("globex")))
	l.ObserveSlice(slice("d", "1", res("1", "0"), consumer("acme")))
	l.ObserveSlice(slice("d", "2", res("1", "0"), consumer("acme"), denied))
	admitted(t, []*ledger.Ledger{l}, request("f", "initech", at(3), res("1", "1Gi")))
	refused(t, []*ledger.Ledger{l}, request("w", "initech", at(4), res("4", "1Gi")))

	s := l.Snapshot()
	assertList(t, res("10", "10Gi"), s.Total, "total")
	assertList(t, res("9", "3Gi"), s.Used, "2 + 5 + 1 (denied, still held) + 1 (in flight)")
	assertList(t, res("1", "7Gi"), s.Free, "free")
	assertList(t, res("0", "0"), s.InUse, "no pods")
	assertList(t, res("0", "0"), s.Reclaiming, "no reclaim")
	assert.Equal(t, 3, s.Accepted, "a, g and f in flight; not the denied one")
	assert.Equal(t, 1, s.Waiting)
	require.Len(t, s.Consumers, 3)
	assert.Equal(t, "globex", s.Consumers[0].Name, "the largest share first")
	assert.Equal(t, "acme", s.Consumers[1].Name)
	assertList(t, res("3", "1Gi"), s.Consumers[1].Used, "acme")
	assert.Equal(t, "initech", s.Consumers[2].Name)
	assert.Equal(t, 1, s.Consumers[2].Waiting)
	assert.Empty(t, s.Closed)
}

// A snapshot names every limited resource, and a free amount below zero
// (a total that fell) as zero.
func TestSnapshotOfAShrunkTotal(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	hold(l, "a", cpu("8"))
	require.NoError(t, l.SetTotal(cpu("4")))
	s := l.Snapshot()
	assertList(t, cpu("0"), s.Free, "never below zero")
	assertList(t, cpu("8"), s.Used, "what is held")
	q := s.Total["cpu"]
	assert.Zero(t, q.Cmp(resource.MustParse("4")))
}

// The counts of issue 42: ten slices, nine Accepted (three of them asking
// more than fits) and one asking what does not fit. Accepted counts the
// nine, Waiting the one that holds nothing, Growing the three whose larger
// offer waits: no slice is counted twice.
func TestSnapshotCountsEachSliceOnce(t *testing.T) {
	l, _ := newLedger(t, cpu("10"))
	for i := range 9 {
		l.ObserveSlice(slice(fmt.Sprintf("s%d", i), "1", cpu("1"), consumer("acme")))
	}
	for i := range 3 {
		refused(t, []*ledger.Ledger{l}, request(fmt.Sprintf("s%d", i), "acme", at(i), cpu("3")))
	}
	refused(t, []*ledger.Ledger{l}, request("new", "globex", at(5), cpu("2")))

	s := l.Snapshot()
	assert.Equal(t, 9, s.Accepted, "the nine slices holding an acceptance")
	assert.Equal(t, 1, s.Waiting, "the one slice that holds nothing and waits")
	assert.Equal(t, 3, s.Growing, "the Accepted slices whose larger offer waits")
	require.Len(t, s.Consumers, 2)
	for _, c := range s.Consumers {
		want := map[string]int{"acme": 0, "globex": 1}[c.Name]
		assert.Equal(t, want, c.Waiting, "consumer %s", c.Name)
	}
}
