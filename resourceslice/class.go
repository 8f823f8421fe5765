package resourceslice

import (
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ControllerName is the name of the controller serving class:
// "resourceslice-<class>". It names the controller's metrics, logs and
// events.
func ControllerName(class string) string {
	return "resourceslice-" + class
}

// ValidateClass returns an error when class cannot be served by a class
// controller: empty or "default" (Liqo's own controller serves them), or not
// a valid label value.
func ValidateClass(class string) error {
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
