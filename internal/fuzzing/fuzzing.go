// Package fuzzing holds what the module's fuzz targets share.
package fuzzing

// LongExponent reports whether s holds an exponent of five digits or more
// (1e-100000000): apimachinery's ParseQuantity takes tens of seconds and
// hundreds of MB on those, which stalls a fuzzing worker, so fuzz targets
// skip them. Such inputs are a known cost of ParseQuantity, not of ours.
func LongExponent(s string) bool {
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
