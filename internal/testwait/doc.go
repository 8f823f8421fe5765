// Package testwait holds the one deadline of the SDK's tests: how long a
// wait for something to happen (a slice decided, a write landed, a
// manager synced or stopped, a process exited) may take before the test
// gives up. Every such wait returns as soon as its condition holds; the
// deadline only turns a hang into a failure. Speed is measured by the
// benchmarks, never by a test's deadline.
//
// Waits that check that something does not happen for a while
// (Consistently, Holds) keep their own, short, durations: they are not
// liveness waits.
//
// It imports nothing from the module, so any package's in-package tests
// may use it.
package testwait
