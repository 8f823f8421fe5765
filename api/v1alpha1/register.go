package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version name the API: sliceclass.io/v1alpha1.
const (
	Group   = "sliceclass.io"
	Version = "v1alpha1"
)

// GroupVersion is sliceclass.io/v1alpha1, for a scheme or a REST mapper.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme adds SliceBudget and SliceBudgetList to s, with the metav1
// types (options, status, watch events) every API group registers. Adding
// them twice is harmless.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &SliceBudget{}, &SliceBudgetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
