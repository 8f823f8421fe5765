package conditions

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

// The condition types and statuses are Liqo's own
// (authv1beta1.ResourceSliceConditionTypeResources, ...Accepted, ...):
// short names here only.
const (
	resources      = authv1beta1.ResourceSliceConditionTypeResources
	authentication = authv1beta1.ResourceSliceConditionTypeAuthentication
	accepted       = authv1beta1.ResourceSliceConditionAccepted
	denied         = authv1beta1.ResourceSliceConditionDenied
)

// Get returns the condition of type t, or nil when rs is nil or has none.
// The returned pointer aliases rs: changing it changes the slice.
func Get(rs *authv1beta1.ResourceSlice, t authv1beta1.ResourceSliceConditionType) *authv1beta1.ResourceSliceCondition {
	if rs == nil {
		return nil
	}
	for i := range rs.Status.Conditions {
		if rs.Status.Conditions[i].Type == t {
			return &rs.Status.Conditions[i]
		}
	}
	return nil
}

// Accept sets the Resources condition to Accepted and reports whether
// anything changed.
func Accept(rs *authv1beta1.ResourceSlice, reason, message string) bool {
	return sliceconds.Set(rs, resources, accepted, reason, message)
}

// Deny sets the Resources condition to Denied and reports whether anything
// changed. Denying is a decision, not an error: a handler that denies returns
// a nil error.
func Deny(rs *authv1beta1.ResourceSlice, reason, message string) bool {
	return sliceconds.Set(rs, resources, denied, reason, message)
}

// IsAccepted reports whether the Resources condition is Accepted.
func IsAccepted(rs *authv1beta1.ResourceSlice) bool {
	c := Get(rs, resources)
	return c != nil && c.Status == accepted
}

// IsDenied reports whether the Resources condition is Denied.
func IsDenied(rs *authv1beta1.ResourceSlice) bool {
	c := Get(rs, resources)
	return c != nil && c.Status == denied
}

// IsDecided reports whether the Resources condition is Accepted or Denied.
func IsDecided(rs *authv1beta1.ResourceSlice) bool {
	return IsAccepted(rs) || IsDenied(rs)
}

// IsAuthenticated reports whether Liqo set the Authentication condition to
// Accepted.
func IsAuthenticated(rs *authv1beta1.ResourceSlice) bool {
	c := Get(rs, authentication)
	return c != nil && c.Status == accepted
}
