package conditions_test

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

func TestNilSafe(t *testing.T) {
	// A nil slice has no conditions, and setting one changes nothing.
	assert.Nil(t, conditions.Get(nil, authv1beta1.ResourceSliceConditionTypeResources))
	assert.False(t, conditions.Accept(nil, "r", "m"))
	assert.False(t, conditions.Deny(nil, "r", "m"))
	assert.False(t, conditions.IsAccepted(nil))
	assert.False(t, conditions.IsDenied(nil))
	assert.False(t, conditions.IsAuthenticated(nil))
	assert.False(t, conditions.IsDecided(nil))
	assert.True(t, sliceconds.Equal(nil, nil), "two nils are equal")
	assert.False(t, sliceconds.Equal(nil, &authv1beta1.ResourceSliceCondition{}), "nil and non-nil are not")
}

func TestSet(t *testing.T) {
	past := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	withResources := func(status authv1beta1.ResourceSliceConditionStatus, reason string) *authv1beta1.ResourceSlice {
		return &authv1beta1.ResourceSlice{Status: authv1beta1.ResourceSliceStatus{Conditions: []authv1beta1.ResourceSliceCondition{
			{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: past},
			{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: status, Reason: reason, LastTransitionTime: past},
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
			wantChanged: true, wantStatus: authv1beta1.ResourceSliceConditionAccepted, wantMoved: true,
		},
		"SameEverything": {
			reason:     "Setting exactly what is there changes nothing.",
			rs:         withResources(authv1beta1.ResourceSliceConditionAccepted, "Granted"),
			set:        func(rs *authv1beta1.ResourceSlice) bool { return conditions.Accept(rs, "Granted", "") },
			wantStatus: authv1beta1.ResourceSliceConditionAccepted,
		},
		"SameStatusNewReason": {
			reason:      "A new reason with the same status keeps LastTransitionTime.",
			rs:          withResources(authv1beta1.ResourceSliceConditionAccepted, "Granted"),
			set:         func(rs *authv1beta1.ResourceSlice) bool { return conditions.Accept(rs, "Capped", "cpu capped") },
			wantChanged: true, wantStatus: authv1beta1.ResourceSliceConditionAccepted,
		},
		"Flip": {
			reason:      "A status change moves LastTransitionTime.",
			rs:          withResources(authv1beta1.ResourceSliceConditionAccepted, "Granted"),
			set:         func(rs *authv1beta1.ResourceSlice) bool { return conditions.Deny(rs, "Full", "") },
			wantChanged: true, wantStatus: authv1beta1.ResourceSliceConditionDenied, wantMoved: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changed := tc.set(tc.rs)
			assert.Equal(t, tc.wantChanged, changed, "%s\nchanged", tc.reason)
			c := conditions.Get(tc.rs, authv1beta1.ResourceSliceConditionTypeResources)
			require.NotNil(t, c, tc.reason)
			assert.Equal(t, tc.wantStatus, c.Status, tc.reason)
			moved := !c.LastTransitionTime.Equal(&past)
			assert.Equal(t, tc.wantMoved, moved, "%s\nLastTransitionTime moved (%s)", tc.reason, c.LastTransitionTime)
			assert.Zero(t, c.LastTransitionTime.Nanosecond(), "%s\nLastTransitionTime %s is not whole seconds", tc.reason, c.LastTransitionTime.Time)
			if a := conditions.Get(tc.rs, authv1beta1.ResourceSliceConditionTypeAuthentication); a != nil {
				assert.True(t, a.LastTransitionTime.Equal(&past), "%s\nthe Authentication condition was touched", tc.reason)
			}
		})
	}
}

func TestPredicates(t *testing.T) {
	rs := &authv1beta1.ResourceSlice{}
	require.False(t, conditions.IsAuthenticated(rs), "an empty slice is not authenticated")
	require.False(t, conditions.IsDecided(rs), "an empty slice is not decided")

	sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "ok", "")
	conditions.Deny(rs, "Full", "")
	assert.True(t, conditions.IsAuthenticated(rs), "after auth accepted: %+v", rs.Status.Conditions)
	assert.True(t, conditions.IsDenied(rs), "after deny: %+v", rs.Status.Conditions)
	assert.False(t, conditions.IsAccepted(rs), "after deny: %+v", rs.Status.Conditions)
	assert.True(t, conditions.IsDecided(rs), "after deny: %+v", rs.Status.Conditions)

	conditions.Accept(rs, "Granted", "")
	assert.True(t, conditions.IsAccepted(rs), "after accept: %+v", rs.Status.Conditions)
	assert.False(t, conditions.IsDenied(rs), "after accept: %+v", rs.Status.Conditions)
	assert.Len(t, rs.Status.Conditions, 2, "one condition per type")
}

func TestEqualIgnoresTime(t *testing.T) {
	a := authv1beta1.ResourceSliceCondition{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted, Reason: "r", LastTransitionTime: metav1.Now()}
	b := a
	b.LastTransitionTime = metav1.NewTime(a.LastTransitionTime.Add(time.Hour))
	assert.True(t, sliceconds.Equal(&a, &b), "conditions differing only in time must be Equal")
	b.Message = "other"
	assert.False(t, sliceconds.Equal(&a, &b), "conditions with different messages must not be Equal")
}
