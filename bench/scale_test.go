package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sliceclass/sliceclass/internal/testwait"
)

// spreadOf counts a run's slices per tenant, per class, and per tenant and
// class.
func spreadOf(n, tenants, classes int) (perTenant, perClass []int, perTenantClass [][]int) {
	perTenant, perClass = make([]int, tenants), make([]int, classes)
	perTenantClass = make([][]int, tenants)
	for t := range perTenantClass {
		perTenantClass[t] = make([]int, classes)
	}
	for i := range n {
		t, c := placeSlice(i, tenants, classes)
		perTenant[t]++
		perClass[c]++
		perTenantClass[t][c]++
	}
	return perTenant, perClass, perTenantClass
}

// width is max − min.
func width(xs []int) int { return slices.Max(xs) - slices.Min(xs) }

func TestPlaceSlice(t *testing.T) {
	for name, tc := range map[string]struct {
		reason                   string
		n, tenants, classes      int
		wantClass, wantPerTenant int // the counts when they are even
	}{
		"Bench": {reason: "the phase's fleet at the size asked for in the issue: every class and tenant an equal share, each tenant's slices over every class alike",
			n: 50000, tenants: scaleTenants, classes: scaleClasses, wantClass: 5000, wantPerTenant: 100},
		"Small": {reason: "fewer slices than tenants × classes still reach every class equally",
			n: 2000, tenants: scaleTenants, classes: scaleClasses, wantClass: 200, wantPerTenant: 4},
		"Ragged": {reason: "a size that is no multiple of the tenants: shares differ by one at most",
			n: 1234, tenants: scaleTenants, classes: scaleClasses},
		"FewerThanTenants": {reason: "fewer slices than tenants: one per tenant used, classes still even",
			n: 30, tenants: scaleTenants, classes: scaleClasses, wantClass: 3},
	} {
		t.Run(name, func(t *testing.T) {
			perTenant, perClass, perTenantClass := spreadOf(tc.n, tc.tenants, tc.classes)
			if w := width(perClass); w > 1 {
				t.Errorf("%s\nper-class counts %v differ by %d, want at most 1", tc.reason, perClass, w)
			}
			if tc.n >= tc.tenants {
				if w := width(perTenant); w > 1 {
					t.Errorf("%s\nper-tenant counts differ by %d, want at most 1", tc.reason, w)
				}
			}
			for tenant, counts := range perTenantClass {
				if w := width(counts); w > 1 {
					t.Fatalf("%s\ntenant %d's slices per class %v differ by %d, want at most 1", tc.reason, tenant, counts, w)
				}
			}
			if tc.wantClass > 0 && slices.Min(perClass) != tc.wantClass {
				t.Errorf("%s\nper-class counts %v, want %d each", tc.reason, perClass, tc.wantClass)
			}
			if tc.wantPerTenant > 0 && slices.Min(perTenant) != tc.wantPerTenant {
				t.Errorf("%s\nper-tenant count %d, want %d each", tc.reason, slices.Min(perTenant), tc.wantPerTenant)
			}
		})
	}
}

func TestPlaceSliceNames(t *testing.T) {
	// A tenant's namespace and consumer are Liqo's shape: liqo-tenant-<id>,
	// its namespace labelled with that consumer's ID.
	if diff := cmp.Diff([]string{"liqo-tenant-007", "consumer-007", "scale-3"}, []string{tenantNamespace(7), tenantConsumer(7), scaleClass(3)}); diff != "" {
		t.Errorf("names: -want +got:\n%s", diff)
	}
}

func TestBytesPerSlice(t *testing.T) {
	for name, tc := range map[string]struct {
		reason      string
		total, base uint64
		n           int
		want        float64
	}{
		"Grows":    {reason: "what the slices add, shared", total: 110 << 20, base: 10 << 20, n: 50000, want: float64(100<<20) / 50000},
		"Shrinks":  {reason: "a heap below the base (GC timing) reads negative, not as a huge unsigned", total: 9, base: 10, n: 1, want: -1},
		"NoSlices": {reason: "no slices, no share", total: 10, base: 1, n: 0, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, bytesPerSlice(tc.total, tc.base, tc.n)); diff != "" {
				t.Errorf("%s\nbytesPerSlice: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMarginal(t *testing.T) {
	for name, tc := range map[string]struct {
		reason   string
		yPrev, y float64
		nPrev, n int
		want     float64
	}{
		"Linear": {reason: "a figure that grows by 4 KiB a slice: the fixed part cancels", yPrev: 30<<20 + 10000*4096, y: 30<<20 + 50000*4096, nPrev: 10000, n: 50000, want: 4096},
		"Flat":   {reason: "a figure that does not grow with the slices", yPrev: 300, y: 300, nPrev: 10000, n: 50000, want: 0},
		"Same":   {reason: "two equal sizes have no slope", yPrev: 1, y: 2, nPrev: 5, n: 5, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, marginal(tc.yPrev, tc.y, tc.nPrev, tc.n)); diff != "" {
				t.Errorf("%s\nmarginal: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestParseScaleN(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		in     string
		want   []int
		err    bool
	}{
		"Off":      {reason: "the default turns the phase off", in: "0"},
		"Empty":    {reason: "nothing turns it off too", in: " "},
		"One":      {reason: "one size", in: "50000", want: []int{50000}},
		"Sorted":   {reason: "two sizes run smallest first", in: "50000, 10000", want: []int{10000, 50000}},
		"Repeated": {reason: "a size named twice runs once", in: "2000,2000", want: []int{2000}},
		"ZeroIn":   {reason: "0 among sizes is no size", in: "0,2000", err: true},
		"Word":     {reason: "not a count", in: "many", err: true},
		"Negative": {reason: "not a positive count", in: "-5", err: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseScaleN(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nparseScaleN(%q): error %v, want error %v", tc.reason, tc.in, err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), "-scale-n") {
				t.Errorf("%s\nparseScaleN(%q): error %q does not name the flag", tc.reason, tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nparseScaleN(%q): -want +got:\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}

func TestScaleSelector(t *testing.T) {
	if diff := cmp.Diff([]string{"bench.sliceclass.io/scale=none", "bench.sliceclass.io/scale=2000"}, []string{scaleSelector(0).String(), scaleSelector(2000).String()}); diff != "" {
		t.Errorf("a replica caches its run's slices only, none for 0: -want +got:\n%s", diff)
	}
}

func TestScaleSection(t *testing.T) {
	const mi = 1 << 20
	run := func(n int, heap uint64, decided time.Duration, cold bool) scaleRun {
		r := scaleRun{n: n, created: time.Duration(n) * time.Millisecond, elected: 30 * time.Millisecond, synced: time.Second,
			first: 2 * time.Second, decided: decided, mem: scaleEvent{Heap: heap, RSS: heap + 40*mi, Peak: heap + 80*mi}}
		r.takeovers = []takeover{{warmup: true, toLeader: 300 * time.Millisecond, toFirst: 350 * time.Millisecond, toAll: 400 * time.Millisecond}}
		if cold {
			r.takeovers = append(r.takeovers, takeover{toLeader: 300 * time.Millisecond, toFirst: 2 * time.Second, toAll: 3 * time.Second})
		}
		return r
	}
	empty := scaleEvent{Heap: 10 * mi, RSS: 50 * mi, Peak: 90 * mi}
	// cells are the values of every row named metric, in order.
	cells := func(s section, metric string) []string {
		var out []string
		for _, r := range s.rows {
			if r[0] == metric {
				out = append(out, r[1:]...)
			}
		}
		return out
	}

	// Two sizes: a column each; the figures per slice, and what the
	// larger adds per slice, in which the fixed 10 MiB cancels.
	s := scaleSection([]scaleRun{run(10000, 10*mi+10000*4096, 20*time.Second, true), run(50000, 10*mi+50000*4096, 100*time.Second, true)}, empty, 20)
	if diff := cmp.Diff([]string{"METRIC", "N=10000", "N=50000"}, s.header); diff != "" {
		t.Errorf("a column per size: -want +got:\n%s", diff)
	}
	for _, r := range s.rows {
		if len(r) != len(s.header) {
			t.Errorf("row %q has %d cells, the header %d", r[0], len(r), len(s.header))
		}
	}
	for _, tc := range []struct {
		metric string
		want   []string
	}{
		{"  bytes per cached slice: heap / RSS / peak RSS (− empty manager's)", []string{"4096 / 4096 / 4096", "4096 / 4096 / 4096"}},
		{"  bytes per slice added, from the previous size: heap / RSS / peak RSS", []string{"—", "4096 / 4096 / 4096"}},
		{"  per slice", []string{"2000 µs", "2000 µs"}},
		{"  per slice added, from the previous size", []string{"—", "2000 µs"}},
		{"leader: manager start → all N decided", []string{"20s", "1m40s"}},
		// Once per takeover: with EnableWarmup, then without.
		{"  → all 20 fresh decided", []string{"400ms", "400ms", "3s", "3s"}},
		{"  standby leads → first fresh slice decided", []string{"50ms", "50ms", "1.7s", "1.7s"}},
	} {
		if diff := cmp.Diff(tc.want, cells(s, tc.metric)); diff != "" {
			t.Errorf("row %q: -want +got:\n%s", tc.metric, diff)
		}
	}

	// One size without the cold takeover: no growth rows, no rows for a
	// takeover not run.
	s = scaleSection([]scaleRun{run(2000, 20*mi, 5*time.Second, false)}, empty, 20)
	for _, r := range s.rows {
		if strings.Contains(r[0], "previous size") || strings.Contains(r[0], "without EnableWarmup") {
			t.Errorf("row %q with one size and no takeover without EnableWarmup", r[0])
		}
	}
}

func TestReplicaProcAwait(t *testing.T) {
	events := make(chan scaleEvent, 4)
	exited := make(chan struct{})
	p := &replicaProc{name: "r", events: events, seen: map[string]scaleEvent{}, exited: exited}
	events <- scaleEvent{Event: evStart, At: 1}
	events <- scaleEvent{Event: evElected, At: 2}
	events <- scaleEvent{Event: evFirst, At: 3}

	// Events arrive in any order; one read past is kept for later.
	if ev, err := p.await(evElected, testwait.Timeout); err != nil || ev.At != 2 {
		t.Fatalf("await(elected) = %+v, %v; want the event at 2", ev, err)
	}
	if ev, err := p.await(evStart, testwait.Timeout); err != nil || ev.At != 1 {
		t.Fatalf("await(start), read on the way to elected = %+v, %v; want the event at 1", ev, err)
	}
	// The time-out path, with a short deadline of its own: none is coming.
	if _, err := p.await(evDecided, 20*time.Millisecond); err == nil || !strings.Contains(err.Error(), "within") {
		t.Fatalf("await(decided) with none coming: %v, want a timeout", err)
	}
	if ev, err := p.await(evFirst, testwait.Timeout); err != nil || ev.At != 3 {
		t.Fatalf("await(first), read while timing out = %+v, %v; want the event at 3", ev, err)
	}

	// A replica that exits first is an error naming what was awaited.
	p.exitErr = errors.New("exit status 1")
	close(events)
	close(exited)
	if _, err := p.await(evMemory, testwait.Timeout); err == nil || !strings.Contains(err.Error(), `before "memory"`) || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("await(memory) after the replica exited: %v, want an error naming memory and the exit", err)
	}
}

func TestVerdictLineNoTargets(t *testing.T) {
	// -scale-only has no targets: say so rather than "0 of 0 met".
	if got := verdictLine(nil); !strings.Contains(got, "no targets") {
		t.Errorf("verdictLine(nil) = %q, want it to say there are no targets", got)
	}
}
