// Package soak holds the SDK's soak test: 10000 slices of three classes
// under continuous churn (creations, deletions, Liqo's rewrites of the
// Authentication condition and authParams, Tenants drained, cordoned and
// reactivated) for a few minutes on a real kube-apiserver and etcd, checking
// that the process's heap and goroutine count stay flat after a warm-up and
// that decisions keep up.
//
// It runs only when SLICECLASS_SOAK=1 (make soak, without -race);
// SLICECLASS_SOAK_DURATION (a Go duration, default 3m) sets how long the
// churn lasts; SLICECLASS_SOAK_SLICES (default 10000) how many slices it
// keeps, to try it out smaller; SLICECLASS_SOAK_EVENTS (none, denied or
// all; default none) the classes' decision events.
package soak
