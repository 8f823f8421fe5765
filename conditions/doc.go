// Package conditions reads and sets the Resources and Authentication
// conditions of a Liqo ResourceSlice.
//
// All functions are nil-safe. Setting a condition to the status it already
// has keeps its LastTransitionTime; timestamps are whole seconds, so an object
// in memory equals what the API server returns after a round trip.
package conditions
