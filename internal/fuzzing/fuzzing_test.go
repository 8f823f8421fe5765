package fuzzing

import "testing"

func TestLongExponent(t *testing.T) {
	cases := map[string]bool{
		"1e-100000000": true,
		"cpu=1E+12345": true,
		"1e1234":       false,
		"8Gi":          false,
		"1e":           false,
		"e-":           false,
	}
	for s, want := range cases {
		if got := LongExponent(s); got != want {
			t.Errorf("LongExponent(%q) = %v, want %v", s, got, want)
		}
	}
}
