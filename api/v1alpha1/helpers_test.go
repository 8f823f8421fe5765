package v1alpha1_test

import (
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// byValue compares quantities by value: 64 and "64" are one quantity,
// whatever their cached string form.
var byValue = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// list is a ResourceList of name, quantity pairs.
func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// quantities is list as the spec's Quantities.
func quantities(pairs ...string) v1alpha1.Quantities { return v1alpha1.Quantities(list(pairs...)) }

// selector is a node selector of matchLabels and, when key is not empty,
// one expression key operator values.
func selector(labels map[string]v1alpha1.LabelValue, key string, op metav1.LabelSelectorOperator, values ...string) *v1alpha1.NodeSelector {
	s := &v1alpha1.NodeSelector{MatchLabels: labels}
	if key != "" {
		s.MatchExpressions = []v1alpha1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}
	}
	return s
}

// preemption is a spec's preemption policy withinBudget p.
func preemption(p v1alpha1.PreemptionPolicy) *v1alpha1.SliceBudgetPreemption {
	return &v1alpha1.SliceBudgetPreemption{WithinBudget: p}
}
