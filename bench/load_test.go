package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLoadavg(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		in     string
		want   float64
		err    bool
	}{
		"Linux": {reason: "the first field is the 1-minute average", in: "0.52 0.58 0.59 1/467 12345\n", want: 0.52},
		"Busy":  {reason: "a load above the cores reads as is", in: "7.25 3.10 1.00 9/500 1", want: 7.25},
		"Idle":  {reason: "an idle machine reads 0", in: "0.00 0.00 0.00 1/100 2", want: 0},
		"Empty": {reason: "an empty file has no load", in: "", err: true},
		"Blank": {reason: "only spaces has no load", in: " \n", err: true},
		"Word":  {reason: "a field that is no number", in: "high 0.1 0.1 1/1 1", err: true},
		"Minus": {reason: "a negative load is no load", in: "-1 0 0 1/1 1", err: true},
		"NaN":   {reason: "NaN parses as a float but is no load", in: "NaN 0 0 1/1 1", err: true},
		"Inf":   {reason: "Inf parses as a float but is no load", in: "+Inf 0 0 1/1 1", err: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseLoadavg(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nparseLoadavg(%q): error %v, want error %v", tc.reason, tc.in, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nparseLoadavg(%q): -want +got:\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}

func TestNoVerdict(t *testing.T) {
	quiet := func(what string) loadCheck {
		return loadCheck{what: what, start: 0.4, end: 2.9, known: true, endKnown: true}
	}
	for name, tc := range map[string]struct {
		reason string
		rounds int
		checks []loadCheck
		cores  int
		want   []string
	}{
		"Quiet": {
			reason: "every stretch started with the load at most the cores: a verdict",
			rounds: 3, cores: 2,
			checks: []loadCheck{quiet("round 1/3"), quiet("round 2/3"), quiet("round 3/3"), quiet("the steady state")},
		},
		"AtCores": {
			reason: "a load equal to the cores is not above them",
			rounds: 3, cores: 2,
			checks: []loadCheck{{what: "round 1/3", start: 2, known: true}},
		},
		"EndIsNoReason": {
			reason: "the bench loads the machine itself: only the load at the start counts",
			rounds: 3, cores: 2,
			checks: []loadCheck{{what: "round 1/3", start: 1, end: 6, known: true, endKnown: true}},
		},
		"BusyRound": {
			reason: "a round that started above the cores makes the run noisy, and says which and by how much",
			rounds: 3, cores: 2,
			checks: []loadCheck{quiet("round 1/3"), {what: "round 2/3", start: 2.31, known: true}, quiet("round 3/3")},
			want:   []string{"load 2.31 > 2 cores at the start of round 2/3: rerun later"},
		},
		"EveryBusyStretch": {
			reason: "each stretch that started busy has its line",
			rounds: 3, cores: 4,
			checks: []loadCheck{{what: "round 1/3", start: 4.5, known: true}, quiet("round 2/3"), {what: "the steady state", start: 9, known: true}},
			want: []string{
				"load 4.50 > 4 cores at the start of round 1/3: rerun later",
				"load 9.00 > 4 cores at the start of the steady state: rerun later",
			},
		},
		"Unknown": {
			reason: "where there is no load to read, the bench cannot tell, and judges",
			rounds: 3, cores: 2,
			checks: []loadCheck{{what: "round 1/3", start: 0}},
		},
		"TooFewRounds": {
			reason: "the median of fewer than 3 rounds is one round's noise",
			rounds: 2, cores: 2,
			checks: []loadCheck{quiet("round 1/2"), quiet("round 2/2")},
			want:   []string{"2 round(s): a verdict needs the medians of at least 3"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := noVerdict(tc.rounds, tc.checks, tc.cores)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nnoVerdict: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBound(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		b      bound
		r      float64
		want   bool
	}{
		"AtLeastMet":    {reason: "at least, above", b: atLeast(0.95), r: 0.96, want: true},
		"AtLeastEqual":  {reason: "at least, equal", b: atLeast(0.95), r: 0.95, want: true},
		"AtLeastMissed": {reason: "at least, below", b: atLeast(0.95), r: 0.94},
		"AtMostMet":     {reason: "at most, below", b: atMost(1.05), r: 1.01, want: true},
		"AtMostEqual":   {reason: "at most, equal", b: atMost(1.05), r: 1.05, want: true},
		"AtMostMissed":  {reason: "at most, above", b: atMost(1.05), r: 1.06},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.b.met(tc.r); got != tc.want {
				t.Errorf("%s\n%s met(%.2f) = %v, want %v", tc.reason, tc.b, tc.r, got, tc.want)
			}
		})
	}
}

// reportTable is a small table with one target met, one missed and a figure.
func reportTable() table {
	var t table
	t.target("decisions/s, ours events none / plain client, same concurrency", "0.97 (rounds 0.90–1.02)", "≥ 0.95", true)
	t.target("create→decision p99 (20 slices/s)", "31ms", "≤ 25ms", false)
	t.add("throughput rounds (medians below, range of the rounds in brackets)", "3")
	return t
}

func TestPrintTableWithVerdict(t *testing.T) {
	var out bytes.Buffer
	printTable(&out, reportTable(), nil)
	got := out.String()
	for _, want := range []string{
		"TARGETS\n", "TARGET", "OK", "≥ 0.95", "yes", "≤ 25ms", "NO", "FIGURES\n",
		"verdict: 1 of 2 targets met; missed: create→decision p99 (20 slices/s)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("a judged table must contain %q; got:\n%s", want, got)
		}
	}
	if strings.Contains(got, "NOISY") {
		t.Errorf("a judged table is not marked noisy; got:\n%s", got)
	}
}

func TestPrintTableWithoutVerdict(t *testing.T) {
	why := []string{"load 2.31 > 2 cores at the start of round 2/3: rerun later"}
	var out bytes.Buffer
	printTable(&out, reportTable(), why)
	got := out.String()
	for _, want := range []string{"VALUE (NOISY)", "0.97 (rounds 0.90–1.02)", "31ms", "no verdict", why[0] + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("a noisy table must contain %q; got:\n%s", want, got)
		}
	}
	for _, banned := range []string{"targets met", "TARGET ", "OK", "≥ 0.95", "≤ 25ms", "yes", "NO\n"} {
		if strings.Contains(got, banned) {
			t.Errorf("a noisy table must not judge: it contains %q; got:\n%s", banned, got)
		}
	}
}
