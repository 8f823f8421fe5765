package main

import (
	"strings"
	"testing"
)

// A child's result is refused when it does not measure what its variant
// stands for, so that the table never compares a build with itself or a
// run that metered nothing.
func TestMeteringResultCheck(t *testing.T) {
	on := &meteringVariant{name: "on", on: true}
	off := &meteringVariant{name: "off"}
	for name, tc := range map[string]struct {
		reason  string
		v       *meteringVariant
		r       meteringResult
		wantErr string
	}{
		"On":            {reason: "metering compiled in, one consumer's cpu, memory and pods metered", v: on, r: meteringResult{Metering: true, ConsumerSeries: 3}},
		"Off":           {reason: "metering compiled out, nothing exported", v: off, r: meteringResult{}},
		"OnBuiltOff":    {reason: "a -tags in GOFLAGS compiled metering out of the on build", v: on, r: meteringResult{ConsumerSeries: 0}, wantErr: "GOFLAGS"},
		"OffBuiltOn":    {reason: "the off build has metering compiled in", v: off, r: meteringResult{Metering: true, ConsumerSeries: 3}, wantErr: "GOFLAGS"},
		"OnMeteredNone": {reason: "metering on but no consumer series: the run measured nothing of it", v: on, r: meteringResult{Metering: true}, wantErr: "metered nothing"},
		"OffExported":   {reason: "compiled out yet exporting consumer series", v: off, r: meteringResult{ConsumerSeries: 2}, wantErr: "compiled out"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.r.check(tc.v)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s\ncheck: %v, want no error", tc.reason, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("%s\ncheck: %v, want an error naming %q", tc.reason, err, tc.wantErr)
			}
		})
	}
}

func TestSpreadFine(t *testing.T) {
	if got := spreadFine([]float64{1}); got != "" {
		t.Errorf("one run has no range, got %q", got)
	}
	if got, want := spreadFine([]float64{1.04, 0.98, 1.01}), "(0.98–1.04)"; got != want {
		t.Errorf("spreadFine: got %q, want %q (the lowest and highest, in any order)", got, want)
	}
}
