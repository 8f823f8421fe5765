package main

import (
	"math"
	"net/http"
	"net/url"
	"runtime/metrics"
	"testing"
	"time"
)

// The tail phase times only the status PATCHes of its own namespace's
// slices: other verbs, subresources, resources and namespaces pass untimed.
func TestTailTimesStatusPatch(t *testing.T) {
	tt := newTailTimes("tail-r0-v1")
	for _, c := range []struct {
		method, path string
		want         string
		ok           bool
	}{
		{http.MethodPatch, "/apis/authentication.liqo.io/v1beta1/namespaces/tail-r0-v1/resourceslices/t-00007/status", "t-00007", true},
		{http.MethodPut, "/apis/authentication.liqo.io/v1beta1/namespaces/tail-r0-v1/resourceslices/t-00007/status", "", false},
		{http.MethodPatch, "/apis/authentication.liqo.io/v1beta1/namespaces/tail-r0-v1/resourceslices/t-00007", "", false},
		{http.MethodPatch, "/apis/authentication.liqo.io/v1beta1/namespaces/other/resourceslices/t-00007/status", "", false},
		{http.MethodPatch, "/apis/offloading.liqo.io/v1beta1/namespaces/tail-r0-v1/shadowpods/p/status", "", false},
		{http.MethodPatch, "/status", "", false},
	} {
		name, ok := tt.statusPatch(&http.Request{Method: c.method, URL: &url.URL{Path: c.path}})
		if name != c.want || ok != c.ok {
			t.Errorf("%s %s: got %q, %v; want %q, %v", c.method, c.path, name, ok, c.want, c.ok)
		}
	}
}

// A slice's steps keep the first or the latest time as asked, and a
// stretch whose end is unknown or earlier than its start counts 0.
func TestTailTimesMarkAndStretch(t *testing.T) {
	tt := newTailTimes("ns")
	t0 := time.Unix(100, 0)
	tt.mark("s", stepHandled, t0, true)
	tt.mark("s", stepHandled, t0.Add(time.Second), true)
	tt.mark("s", stepSeen, t0, false)
	tt.mark("s", stepSeen, t0.Add(time.Second), false)
	a := tt.get("s")
	if !a[stepHandled].Equal(t0) || !a[stepSeen].Equal(t0.Add(time.Second)) {
		t.Fatalf("handled %v (want the first, %v), seen %v (want the latest)", a[stepHandled], t0, a[stepSeen])
	}
	if got := msSince(t0, t0.Add(40*time.Millisecond)); got != 40 {
		t.Errorf("msSince of 40 ms: %v", got)
	}
	if got := msSince(t0.Add(time.Second), t0); got != 0 {
		t.Errorf("msSince backwards: %v, want 0", got)
	}
	if got := msSince(time.Time{}, t0); got != 0 {
		t.Errorf("msSince from an unknown step: %v, want 0", got)
	}
}

// The GC window counts the pauses between two readings, each at its
// bucket's midpoint (an open bucket at its finite end), the longest at its
// bucket's upper bound.
func TestGCWindowSince(t *testing.T) {
	buckets := []float64{math.Inf(-1), 0.001, 0.002, 0.004, math.Inf(1)}
	before := gcSample{cycles: 10, pauses: &metrics.Float64Histogram{Counts: []uint64{0, 1, 0, 0}, Buckets: buckets}}
	after := gcSample{cycles: 13, pauses: &metrics.Float64Histogram{Counts: []uint64{0, 3, 1, 0}, Buckets: buckets}}
	w := after.since(before)
	if w.cycles != 3 {
		t.Errorf("cycles %d, want 3", w.cycles)
	}
	// 2 pauses at 1.5 ms and 1 at 3 ms.
	if want := 6 * time.Millisecond; w.pauseTotal < want-time.Microsecond || w.pauseTotal > want+time.Microsecond {
		t.Errorf("pause total %v, want %v", w.pauseTotal, want)
	}
	if w.longest != 4*time.Millisecond {
		t.Errorf("longest %v, want 4ms", w.longest)
	}
	open := gcSample{cycles: 14, pauses: &metrics.Float64Histogram{Counts: []uint64{0, 3, 1, 2}, Buckets: buckets}}
	if w := open.since(after); w.pauseTotal != 8*time.Millisecond || w.longest != 4*time.Millisecond {
		t.Errorf("two pauses in the open bucket above 4 ms: total %v, longest %v; want 8ms, 4ms", w.pauseTotal, w.longest)
	}
}

// Two budget counts measure the same when their round ranges overlap.
func TestSameWithinRange(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want bool
	}{
		{[]float64{900, 950, 1000}, []float64{990, 1010, 1050}, true},
		{[]float64{900, 950, 1000}, []float64{1001, 1010}, false},
		{[]float64{900}, []float64{900}, true},
		{nil, []float64{900}, false},
	} {
		if got := sameWithinRange(c.a, c.b); got != c.want {
			t.Errorf("sameWithinRange(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
