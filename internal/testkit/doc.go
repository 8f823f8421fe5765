// Package testkit holds what the SDK's own tests share: starting a manager
// on a control plane and stopping it cleanly, waits that say what they
// wait for, a namespace per test, and a manager whose API server does not
// exist. It is a normal package, so that test packages can import it, and
// an internal one: what users get for their tests is in testing (package
// slicetest) and testing/controlplane. Of the SDK it imports only
// testing/controlplane, so that the tests of any other package, internal
// tests included, may import it without a cycle.
//
// The waits run their condition on the test's goroutine, so a condition
// may call require (t.FailNow) and read the test's state freely; testify's
// require.Eventually runs it on a goroutine of its own, where FailNow is
// not allowed, and may leave it running when the wait times out. Use
// require.Eventually where the condition is a pure function and its
// message is enough.
package testkit
