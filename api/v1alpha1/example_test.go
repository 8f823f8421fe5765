package v1alpha1_test

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// A SliceBudget in Go, registered in a scheme, and the spec as the API
// server stores it: gold and silver's 64 CPU, at most 16 for any one
// consumer but acme, and eviction 10 minutes after a shrink.
func ExampleAddToScheme() {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	sb := &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "premium"},
		Spec: v1alpha1.SliceBudgetSpec{
			Total:                v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("64")},
			Preemption:           &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority},
			EvictionAfterSeconds: ptr.To[int32](600),
			ConsumerLimit:        v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("16")},
			ConsumerLimits: []v1alpha1.ConsumerLimitOverride{
				{Consumer: "acme", Limits: v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("32")}},
			},
		},
	}
	gvks, _, err := s.ObjectKinds(sb)
	if err != nil {
		panic(err)
	}
	spec, err := json.Marshal(sb.Spec)
	if err != nil {
		panic(err)
	}
	fmt.Println(gvks[0])
	fmt.Println(string(spec))
	// Output:
	// sliceclass.io/v1alpha1, Kind=SliceBudget
	// {"total":{"cpu":"64"},"preemption":{"withinBudget":"LowerPriority"},"evictionAfterSeconds":600,"consumerLimit":{"cpu":"16"},"consumerLimits":[{"consumer":"acme","limits":{"cpu":"32"}}]}
}
