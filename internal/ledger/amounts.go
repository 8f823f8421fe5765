package ledger

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Arithmetic of resource lists, shared by the books, the fit check and the
// planner: pure functions of their arguments.

func add(rl corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) {
	v := rl[n]
	v.Add(q)
	rl[n] = v
}

func sub(rl corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) {
	if rl == nil {
		return
	}
	v := rl[n]
	v.Sub(q)
	rl[n] = v
}

// maxList is the per-resource maximum of a and b.
func maxList(a, b corev1.ResourceList) corev1.ResourceList {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make(corev1.ResourceList, len(a)+len(b))
	for n, q := range a {
		out[n] = q
	}
	for n, q := range b {
		if c, ok := out[n]; !ok || q.Cmp(c) > 0 {
			out[n] = q
		}
	}
	return out
}

// minList is the per-resource minimum of a and b, over the resources both
// name.
func minList(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range a {
		if c, ok := b[n]; ok {
			if c.Cmp(q) < 0 {
				q = c
			}
			out[n] = q
		}
	}
	return out
}

func allZero(rl corev1.ResourceList) bool {
	for _, q := range rl {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

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

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if c, ok := b[n]; !ok || c.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// takeFrom lowers keep by what is still wanted, per resource, at most
// what keep has, and lowers want by what it took (a resource fully taken
// leaves want); it reports whether it took anything.
func takeFrom(keep, want corev1.ResourceList) bool {
	took := false
	for n, need := range want {
		have, ok := keep[n]
		if !ok || have.Sign() <= 0 {
			continue
		}
		take := need.DeepCopy()
		if have.Cmp(take) < 0 {
			take = have.DeepCopy()
		}
		have.Sub(take)
		keep[n] = have
		need.Sub(take)
		if need.Sign() <= 0 {
			delete(want, n)
		} else {
			want[n] = need
		}
		took = true
	}
	return took
}

// takesFrom lowers over by charge on each resource still over (a resource
// no longer over leaves it) and reports whether charge took from any.
func takesFrom(over, charge corev1.ResourceList) bool {
	took := false
	for n, o := range over {
		c, ok := charge[n]
		if !ok || c.Sign() <= 0 {
			continue
		}
		o.Sub(c)
		if o.Sign() <= 0 {
			delete(over, n)
		} else {
			over[n] = o
		}
		took = true
	}
	return took
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
