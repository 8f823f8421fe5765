package flags

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// maxQuantity is the largest quantity ParseResourceList accepts: the
// largest integer a Quantity holds exactly. Beyond it a Quantity no longer
// prints as it parsed (1000E prints as "1").
var maxQuantity = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)

// ParseResourceList parses a resource list written as a flag value,
// "cpu=4,memory=8Gi,nvidia.com/gpu=2" (spaces around entries allowed; ""
// is the empty list). It refuses an entry that is not name=quantity, a
// malformed, negative or too large quantity (beyond the largest integer a
// Quantity holds exactly, where it would print as another value), and a
// name given twice. Caps, budgets and limits given on a command line all
// take this form:
//
//	total, err := flags.ParseResourceList("cpu=64,memory=256Gi")
//	shared, err := budget.New("premium", total)
func ParseResourceList(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("%q: want name=quantity, e.g. cpu=4", kv)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", kv, err)
		}
		switch {
		case q.Sign() < 0:
			return nil, fmt.Errorf("%q: negative quantity %s", kv, q.String())
		case q.Cmp(maxQuantity) > 0:
			return nil, fmt.Errorf("%q: larger than %s", kv, maxQuantity.String())
		}
		if _, dup := out[corev1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("%s given twice", name)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// formatResourceList writes rl in ParseResourceList's form, names sorted:
// what ParseResourceList reads back equal.
func formatResourceList(rl corev1.ResourceList) string {
	names := make([]string, 0, len(rl))
	for name := range rl {
		names = append(names, string(name))
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		q := rl[corev1.ResourceName(name)]
		parts = append(parts, name+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// ResourceList is a flag holding a resource list in ParseResourceList's
// form; each use replaces the list:
//
//	var limit flags.ResourceList
//	fs.Var(&limit, "consumer-limit", "what one consumer may hold, e.g. cpu=32")
//	// after Parse: corev1.ResourceList(limit)
type ResourceList corev1.ResourceList

// String implements flag.Value.
func (r *ResourceList) String() string {
	if r == nil {
		return ""
	}
	return formatResourceList(corev1.ResourceList(*r))
}

// Set implements flag.Value.
func (r *ResourceList) Set(s string) error {
	rl, err := ParseResourceList(s)
	if err != nil {
		return err
	}
	*r = ResourceList(rl)
	return nil
}
