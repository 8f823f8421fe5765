package classlease

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sliceFeed is a client.Reader that lists the slices the test sets and
// no Lease: the reporter's input without an object store, so that the heap
// measured is the reporter's and the metrics'.
type sliceFeed struct{ slices []authv1beta1.ResourceSlice }

func (*sliceFeed) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("sliceFeed: Get is not used by the reporter")
}

func (f *sliceFeed) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *authv1beta1.ResourceSliceList:
		l.Items = f.slices
	case *coordinationv1.LeaseList:
		l.Items = nil
	default:
		return fmt.Errorf("sliceFeed: cannot list %T", list)
	}
	return nil
}

// countingRecorder counts events and keeps nothing.
type countingRecorder struct{ n int }

func (r *countingRecorder) Eventf(kruntime.Object, kruntime.Object, string, string, string, string, ...any) {
	r.n++
}

// heapInUse is the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A consumer can make up a new class per slice. Round after round of
// 10,000 slices of 10,000 made-up classes, flagged and then deleted, the
// heap after deletion stays where the first round left it: the series and
// the reporter's memory of the slices go with the slices. Kept, the 20,000
// series a round would add up round after round.
func TestUnservedReporterHeapFlatAfterMadeUpClasses(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap over 40,000 made-up classes")
	}
	const n, rounds, after = 10000, 4, time.Second
	feed := &sliceFeed{}
	reg := prometheus.NewRegistry()
	count, oldest := NewGauges()
	require.NoError(t, reg.Register(count))
	require.NoError(t, reg.Register(oldest))
	replicated, err := labels.Parse("liqo.io/originID,liqo.io/replicated=true")
	require.NoError(t, err)
	rec := &countingRecorder{}
	now := time.Now().Truncate(time.Second)
	u, err := NewReporter(ReporterConfig{
		Slices: feed, Leases: feed, Recorder: rec, Synced: func(context.Context) bool { return true },
		ClassOf: func(rs *authv1beta1.ResourceSlice) string { return string(rs.Spec.Class) }, Replicated: replicated,
		Namespace: reporterNS, After: after, Count: count, Oldest: oldest,
		Clock: func() time.Time { return now },
	})
	require.NoError(t, err)
	ctx := context.Background()
	series := func() int {
		families, err := reg.Gather()
		require.NoError(t, err)
		total := 0
		for _, mf := range families {
			total += len(mf.GetMetric())
		}
		return total
	}

	var held, afterFirst, afterLast uint64
	for r := range rounds {
		feed.slices = make([]authv1beta1.ResourceSlice, n)
		for i := range feed.slices {
			name := fmt.Sprintf("made-up-%d-%d", r, i)
			feed.slices[i] = *replicatedSlice(name, name, now)
		}
		require.NoError(t, u.Check(ctx))
		now = now.Add(after)
		require.NoError(t, u.Check(ctx))
		require.Equal(t, 2*n, series(), "round %d: every made-up class is flagged", r)
		feed.slices = nil
		if r == 0 {
			// What the reporter and its metrics hold for n classes.
			held = heapInUse()
		}
		now = now.Add(time.Second)
		require.NoError(t, u.Check(ctx))
		require.Zero(t, series(), "round %d: the classes are gone, and so are their series", r)
		switch r {
		case 0:
			afterFirst = heapInUse()
		case rounds - 1:
			afterLast = heapInUse()
		}
	}
	require.Equal(t, rounds*n, rec.n, "one event per slice")
	// Signed: the heap may well be smaller after the last round.
	grown := int64(afterLast) - int64(afterFirst)
	holds := int64(held) - int64(afterFirst)
	t.Logf("heap in use: %d KiB holding %d classes, %d KiB after their deletion, %+d KiB after %d more rounds",
		held>>10, n, afterFirst>>10, grown>>10, rounds-1)
	require.Positive(t, holds, "flagged classes take room: else this test measures nothing")
	require.Less(t, grown, holds/4,
		"after %d more rounds of %d made-up classes, all deleted, the heap grew by %d KiB; holding one round took %d KiB", rounds-1, n, grown>>10, holds>>10)
}
