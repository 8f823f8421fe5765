package budget

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// standardResources are the resource names with no domain a budget may
// limit: the standard names of a container's requests and of a
// ResourceQuota that a slice can carry. With hugepages-<size>, they are
// what Kubernetes accepts without a domain; any other name must be
// domain-qualified (nvidia.com/gpu), as Kubernetes requires of an extended
// resource. The SliceBudget CRD refuses the same names (its Quantities
// rule).
var standardResources = map[corev1.ResourceName]bool{
	corev1.ResourceCPU:              true,
	corev1.ResourceMemory:           true,
	corev1.ResourceEphemeralStorage: true,
	corev1.ResourceStorage:          true,
	corev1.ResourcePods:             true,
}

// checkResourceNames returns an error naming, for what (such as "total"),
// every resource name Kubernetes would refuse: not a qualified name, or
// neither standard nor domain-qualified. A budget limits only what it names,
// so a misspelt name ("cpus") would silently leave the resource unlimited.
func checkResourceNames(what string, names ...corev1.ResourceName) error {
	var bad []string
	for _, n := range names {
		s := string(n)
		switch {
		case len(validation.IsQualifiedName(s)) > 0:
			bad = append(bad, fmt.Sprintf("%q is not a qualified name", s))
		case !strings.Contains(s, "/") && !standardResources[n] && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix):
			bad = append(bad, fmt.Sprintf("%q is neither a standard resource name (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>) nor domain-qualified (such as nvidia.com/gpu)", s))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("%s: %s: a budget limits only the resources it names, so it would limit nothing", what, strings.Join(bad, "; "))
}

// namesOf returns the resource names of l.
func namesOf(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	return out
}

// checkNames checks the resource names the options o carry.
func (o *options) checkNames() error {
	for _, c := range []struct {
		what  string
		names []corev1.ResourceName
	}{
		{"consumer limit", namesOf(o.consumerLimit)},
		{"borrowing limit", namesOf(o.borrowing)},
		{"lending limit", namesOf(o.lending)},
		{"resources", o.resources},
		{"reserve", namesOf(o.reserve)},
	} {
		if err := checkResourceNames(c.what, c.names...); err != nil {
			return err
		}
	}
	return nil
}
