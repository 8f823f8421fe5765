// Package classname holds the one rule for a class name a class controller
// may serve, for package resourceslice (every registration checks it) and
// package flags (--class-name and a classes file are checked before any
// manager is built).
package classname

import (
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate returns an error when class cannot be served by a class
// controller: empty or "default" (Liqo's own controller serves them), or not
// a valid label value.
func Validate(class string) error {
	switch authv1beta1.ResourceSliceClass(class) {
	case authv1beta1.ResourceSliceClassUnknown:
		return fmt.Errorf("class %q is reserved: Liqo's own controller serves slices with no class", class)
	case authv1beta1.ResourceSliceClassDefault:
		return fmt.Errorf("class %q is reserved: Liqo's own controller serves it", class)
	}
	if errs := validation.IsValidLabelValue(class); len(errs) > 0 {
		return fmt.Errorf("class %q is not a valid label value: %v", class, errs)
	}
	return nil
}
