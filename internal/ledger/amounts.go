package ledger

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Arithmetic of resource lists, shared by the books, the fit check and the
// planner: pure functions of their arguments.

func anyPositive(rl corev1.ResourceList) bool {
	for _, q := range rl {
		if q.Sign() > 0 {
			return true
		}
	}
	return false
}

func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// Amounts renders rl as "cpu 4, memory 1Gi", by resource name.
func Amounts(rl corev1.ResourceList) string {
	parts := make([]string, 0, len(rl))
	for _, n := range sortedNames(rl) {
		q := rl[n]
		parts = append(parts, fmt.Sprintf("%s %s", n, q.String()))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}
