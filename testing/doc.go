// Package slicetest is the harness for unit-testing a class controller's
// Handler: slice and Tenant builders, and a run of a class's real
// controller on controller-runtime's fake client (with the
// status subresource), its classes served from one resourceslice.ClassSet
// as a manager's main serves them (the budgets' feeds, the Tenant index,
// the namespaces' consumers; several classes on one budget with
// WithAnotherClass; a budget that follows a SliceBudget with WithSliceBudget,
// whose status Harness.SliceBudget reads), that reports the decision, the
// resources, the events and every API write, with fault injection on
// status writes.
//
// Import it with its name:
//
//	import slicetest "github.com/sliceclass/sliceclass/testing"
//
// The fake client does not validate schemas, bump resourceVersions like an
// API server, or race a second writer: behaviours that depend on the server
// belong in integration tests on a real control plane (package
// github.com/sliceclass/sliceclass/testing/controlplane). There, CreateAsLiqo
// and Authenticate play Liqo's part on the provider, and WaitForDecision
// waits for the class controller's answer; package
// github.com/sliceclass/sliceclass/testing/envkit starts your manager on it,
// waits with a message, and makes the cluster around the slices (Ready
// nodes, tenant namespaces and Tenants, Liqo's QuotaCreator).
package slicetest
