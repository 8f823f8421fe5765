package conditions

import (
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and statuses, re-exported for brevity.
const (
	Resources      = authv1beta1.ResourceSliceConditionTypeResources
	Authentication = authv1beta1.ResourceSliceConditionTypeAuthentication
	Accepted       = authv1beta1.ResourceSliceConditionAccepted
	Denied         = authv1beta1.ResourceSliceConditionDenied
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

// Set sets the condition of type t to status, reason and message, adding it
// when missing. LastTransitionTime moves to now (whole seconds) only when the
// status changes. It reports whether anything changed; a nil rs changes
// nothing.
func Set(rs *authv1beta1.ResourceSlice, t authv1beta1.ResourceSliceConditionType,
	status authv1beta1.ResourceSliceConditionStatus, reason, message string) bool {
	if rs == nil {
		return false
	}
	if c := Get(rs, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == message {
			return false
		}
		if c.Status != status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = Now()
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return true
	}
	rs.Status.Conditions = append(rs.Status.Conditions, authv1beta1.ResourceSliceCondition{
		Type:               t,
		Status:             status,
		Reason:             reason,
		Message:            message,
		LastTransitionTime: Now(),
	})
	return true
}

// Accept sets the Resources condition to Accepted and reports whether
// anything changed.
func Accept(rs *authv1beta1.ResourceSlice, reason, message string) bool {
	return Set(rs, Resources, Accepted, reason, message)
}

// Deny sets the Resources condition to Denied and reports whether anything
// changed. Denying is a decision, not an error: a handler that denies returns
// a nil error.
func Deny(rs *authv1beta1.ResourceSlice, reason, message string) bool {
	return Set(rs, Resources, Denied, reason, message)
}

// IsAccepted reports whether the Resources condition is Accepted.
func IsAccepted(rs *authv1beta1.ResourceSlice) bool {
	c := Get(rs, Resources)
	return c != nil && c.Status == Accepted
}

// IsDenied reports whether the Resources condition is Denied.
func IsDenied(rs *authv1beta1.ResourceSlice) bool {
	c := Get(rs, Resources)
	return c != nil && c.Status == Denied
}

// IsDecided reports whether the Resources condition is Accepted or Denied.
func IsDecided(rs *authv1beta1.ResourceSlice) bool {
	return IsAccepted(rs) || IsDenied(rs)
}

// IsAuthenticated reports whether Liqo set the Authentication condition to
// Accepted.
func IsAuthenticated(rs *authv1beta1.ResourceSlice) bool {
	c := Get(rs, Authentication)
	return c != nil && c.Status == Accepted
}

// Equal reports whether a and b have the same type, status, reason and
// message, ignoring LastTransitionTime. Two nil conditions are equal.
func Equal(a, b *authv1beta1.ResourceSliceCondition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

// Now returns the current time truncated to whole seconds, the precision the
// API server stores.
func Now() metav1.Time {
	return metav1.NewTime(time.Now().Truncate(time.Second))
}
