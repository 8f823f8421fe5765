// Package testkit holds what the SDK's own suites under test/ share beyond
// the public kit (testing/envkit): a namespace per test, and the kit under
// the names the suites used before it was public. It lives under test/
// because only those suites use it: the SDK's packages and the public kit
// stay below the tests that drive them, and a package's own tests use
// testing/envkit directly.
package testkit
