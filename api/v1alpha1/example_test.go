package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
			Total:          v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("64")},
			Preemption:     true,
			EvictionAfter:  &metav1.Duration{Duration: 10 * time.Minute},
			ConsumerLimit:  v1alpha1.Quantities{corev1.ResourceCPU: resource.MustParse("16")},
			ConsumerLimits: map[string]v1alpha1.Quantities{"acme": {corev1.ResourceCPU: resource.MustParse("32")}},
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
	// {"total":{"cpu":"64"},"preemption":true,"evictionAfter":"10m0s","consumerLimit":{"cpu":"16"},"consumerLimits":{"acme":{"cpu":"32"}}}
}
