// Package testkit holds what the SDK's own tests share beyond the public
// kit (testing/envkit): a namespace per test, and the kit under the names
// the tests used before it was public. Of the SDK it imports only
// testing/controlplane and testing/envkit, so that the tests of any other
// package, internal tests included, may import it without a cycle.
package testkit
