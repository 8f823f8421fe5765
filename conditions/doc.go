// Package conditions sets the Resources condition of a Liqo ResourceSlice,
// the one a class controller owns (Accept, Deny), and reads it and the
// Authentication condition Liqo sets (Get, IsAccepted, IsDenied,
// IsDecided, IsAuthenticated). The condition types and statuses are Liqo's
// own: authv1beta1.ResourceSliceConditionTypeResources,
// authv1beta1.ResourceSliceConditionAccepted, ....
//
// All functions are nil-safe. Setting a condition to the status it already
// has keeps its LastTransitionTime; timestamps are whole seconds, so an object
// in memory equals what the API server returns after a round trip.
package conditions
