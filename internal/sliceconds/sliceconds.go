// Package sliceconds sets a ResourceSlice's conditions for the SDK and its
// test kits: package conditions (Accept, Deny) and the status writer set
// the Resources condition through it, the test kits set the Authentication
// condition as Liqo does. A handler decides with conditions.Accept and
// conditions.Deny; Liqo alone sets Authentication.
package sliceconds

import (
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set sets the condition of type t to status, reason and message, adding it
// when missing. LastTransitionTime moves to now (whole seconds) only when the
// status changes. It reports whether anything changed; a nil rs changes
// nothing.
func Set(rs *authv1beta1.ResourceSlice, t authv1beta1.ResourceSliceConditionType,
	status authv1beta1.ResourceSliceConditionStatus, reason, message string) bool {
	if rs == nil {
		return false
	}
	if c := get(rs, t); c != nil {
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

// get returns rs's condition of type t, or nil.
func get(rs *authv1beta1.ResourceSlice, t authv1beta1.ResourceSliceConditionType) *authv1beta1.ResourceSliceCondition {
	for i := range rs.Status.Conditions {
		if rs.Status.Conditions[i].Type == t {
			return &rs.Status.Conditions[i]
		}
	}
	return nil
}
