package conditions_test

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/conditions"
)

func TestNilSafe(t *testing.T) {
	if conditions.Get(nil, conditions.Resources) != nil || conditions.Accept(nil, "r", "m") || conditions.Deny(nil, "r", "m") ||
		conditions.IsAccepted(nil) || conditions.IsDenied(nil) || conditions.IsAuthenticated(nil) || conditions.IsDecided(nil) {
		t.Error("helpers must treat a nil slice as having no conditions and change nothing")
	}
	if !conditions.Equal(nil, nil) || conditions.Equal(nil, &authv1beta1.ResourceSliceCondition{}) {
		t.Error("Equal: two nils are equal, nil and non-nil are not")
	}
}

func TestSet(t *testing.T) {
	past := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	withResources := func(status authv1beta1.ResourceSliceConditionStatus, reason string) *authv1beta1.ResourceSlice {
		return &authv1beta1.ResourceSlice{Status: authv1beta1.ResourceSliceStatus{Conditions: []authv1beta1.ResourceSliceCondition{
			{Type: conditions.Authentication, Status: conditions.Accepted, LastTransitionTime: past},
			{Type: conditions.Resources, Status: status, Reason: reason, LastTransitionTime: past},
		}}}
	}
	cases := map[string]struct {
		reason      string
		rs          *authv1beta1.ResourceSlice
		set         func(*authv1beta1.ResourceSlice) bool
		wantChanged bool
		wantStatus  authv1beta1.ResourceSliceConditionStatus
		wantMoved   bool
	}{
		"AddNew": {
			reason:      "A missing condition is added with a fresh time.",
			rs:          &authv1beta1.ResourceSlice{},
			set:         func(rs *authv1beta1.ResourceSlice) bool { return conditions.Accept(rs, "Granted", "") },
			wantChanged: true, wantStatus: conditions.Accepted, wantMoved: true,
		},
		"SameEverything": {
			reason:     "Setting exactly what is there changes nothing.",
			rs:         withResources(conditions.Accepted, "Granted"),
			set:        func(rs *authv1beta1.ResourceSlice) bool { return conditions.Accept(rs, "Granted", "") },
			wantStatus: conditions.Accepted,
		},
		"SameStatusNewReason": {
			reason:      "A new reason with the same status keeps LastTransitionTime.",
			rs:          withResources(conditions.Accepted, "Granted"),
			set:         func(rs *authv1beta1.ResourceSlice) bool { return conditions.Accept(rs, "Capped", "cpu capped") },
			wantChanged: true, wantStatus: conditions.Accepted,
		},
		"Flip": {
			reason:      "A status change moves LastTransitionTime.",
			rs:          withResources(conditions.Accepted, "Granted"),
			set:         func(rs *authv1beta1.ResourceSlice) bool { return conditions.Deny(rs, "Full", "") },
			wantChanged: true, wantStatus: conditions.Denied, wantMoved: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changed := tc.set(tc.rs)
			if changed != tc.wantChanged {
				t.Errorf("%s\nchanged: want %v, got %v", tc.reason, tc.wantChanged, changed)
			}
			c := conditions.Get(tc.rs, conditions.Resources)
			if c == nil || c.Status != tc.wantStatus {
				t.Fatalf("%s\nResources condition: want status %q, got %+v", tc.reason, tc.wantStatus, c)
			}
			if moved := !c.LastTransitionTime.Equal(&past); moved != tc.wantMoved {
				t.Errorf("%s\nLastTransitionTime moved: want %v, got %v (%s)", tc.reason, tc.wantMoved, moved, c.LastTransitionTime)
			}
			if c.LastTransitionTime.Nanosecond() != 0 {
				t.Errorf("%s\nLastTransitionTime %s is not whole seconds", tc.reason, c.LastTransitionTime.Time)
			}
			if a := conditions.Get(tc.rs, conditions.Authentication); a != nil && !a.LastTransitionTime.Equal(&past) {
				t.Errorf("%s\nthe Authentication condition was touched", tc.reason)
			}
		})
	}
}

func TestPredicates(t *testing.T) {
	rs := &authv1beta1.ResourceSlice{}
	if conditions.IsAuthenticated(rs) || conditions.IsDecided(rs) {
		t.Fatal("an empty slice is neither authenticated nor decided")
	}
	conditions.Set(rs, conditions.Authentication, conditions.Accepted, "ok", "")
	conditions.Deny(rs, "Full", "")
	if !conditions.IsAuthenticated(rs) || !conditions.IsDenied(rs) || conditions.IsAccepted(rs) || !conditions.IsDecided(rs) {
		t.Errorf("after auth accepted and resources denied: %+v", rs.Status.Conditions)
	}
	conditions.Accept(rs, "Granted", "")
	if !conditions.IsAccepted(rs) || conditions.IsDenied(rs) {
		t.Errorf("after accept: %+v", rs.Status.Conditions)
	}
	if n := len(rs.Status.Conditions); n != 2 {
		t.Errorf("want 2 conditions (one per type), got %d", n)
	}
}

func TestEqualIgnoresTime(t *testing.T) {
	a := authv1beta1.ResourceSliceCondition{Type: conditions.Resources, Status: conditions.Accepted, Reason: "r", LastTransitionTime: metav1.Now()}
	b := a
	b.LastTransitionTime = metav1.NewTime(a.LastTransitionTime.Add(time.Hour))
	if !conditions.Equal(&a, &b) {
		t.Error("conditions differing only in time must be Equal")
	}
	b.Message = "other"
	if conditions.Equal(&a, &b) {
		t.Error("conditions with different messages must not be Equal")
	}
}
