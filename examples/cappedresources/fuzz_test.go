package cappedresources_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/examples/cappedresources"
)

// FuzzParseCaps: ParseCaps never panics on any --cap value; what it accepts
// holds no negative cap, is accepted by New unless it is empty (a policy
// with no cap would offer nothing, so New refuses it), and reads back equal (by value)
// when written out again in its own name=quantity,... form (apimachinery
// prints a value of 1000E or more without its suffix, 10^21 as "1", so
// ParseCaps must refuse those: seed beyond-exa); a value with a well-formed
// negative quantity among its entries, or with a name given twice, is
// refused.
func FuzzParseCaps(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		if longExponent(s) {
			t.Skip("apimachinery's ParseQuantity is slow on long exponents")
		}
		caps, err := cappedresources.ParseCaps(s)
		if hasNegativeEntry(s) {
			assert.Error(t, err, "a negative cap in %q", s)
		}
		if hasRepeatedName(s) {
			assert.Error(t, err, "a cap given twice in %q", s)
		}
		if err != nil {
			return
		}
		for name, q := range caps {
			assert.GreaterOrEqual(t, q.Sign(), 0, "cap %s=%s from %q", name, q.String(), s)
		}
		_, err = cappedresources.New(caps)
		if len(caps) == 0 {
			assert.Error(t, err, "New accepts no cap at all (from %q): the policy would offer nothing", s)
		} else {
			assert.NoError(t, err, "New refuses what ParseCaps accepted from %q", s)
		}

		text := formatCaps(caps)
		again, err := cappedresources.ParseCaps(text)
		require.NoError(t, err, "%q parsed from %q does not parse again", text, s)
		assert.Empty(t, cmp.Diff(caps, again, cmpopts.EquateEmpty(),
			cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })),
			"-first +second: %q written as %q", s, text)
	})
}

// formatCaps writes caps in ParseCaps's documented form, names sorted.
func formatCaps(caps corev1.ResourceList) string {
	entries := make([]string, 0, len(caps))
	for name, q := range caps {
		entries = append(entries, string(name)+"="+q.String())
	}
	sort.Strings(entries)
	return strings.Join(entries, ",")
}

// hasNegativeEntry reports whether some comma-separated entry of s is
// name=quantity with a quantity that parses below zero.
func hasNegativeEntry(s string) bool {
	for _, kv := range strings.Split(s, ",") {
		_, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if q, err := resource.ParseQuantity(strings.TrimSpace(value)); err == nil && q.AsApproximateFloat64() < 0 {
			return true
		}
	}
	return false
}

// hasRepeatedName reports whether two comma-separated entries of s name the
// same resource (spaces around the name aside): ParseCaps refuses that
// rather than let the last one win.
func hasRepeatedName(s string) bool {
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		if seen[name] {
			return true
		}
		seen[name] = true
	}
	return false
}

// longExponent reports whether s holds an exponent of five digits or more
// (1e-100000000): apimachinery's ParseQuantity takes tens of seconds and
// hundreds of MB on those, which stalls a fuzzing worker, so the target
// skips them. (Examples import public packages only: this is the module's
// internal/fuzzing.LongExponent, which examples cannot import.)
func longExponent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != 'e' && s[i] != 'E' {
			continue
		}
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		digits := 0
		for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
			digits++
		}
		if digits >= 5 {
			return true
		}
	}
	return false
}
