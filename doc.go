// Package sliceclass is an SDK for writing class controllers for Liqo
// ResourceSlices.
//
// A Liqo consumer asks a provider for resources by creating a ResourceSlice.
// Liqo's own controller authenticates every slice, but decides resources only
// for slices of class "" and "default". A slice with spec.class "gold" waits
// for a class controller for "gold": that is what this SDK builds, around a
// small policy the operator writes.
//
// # Getting started
//
// Write a [handler.Handler] that decides one slice: set the Resources condition
// to Accepted or Denied with [conditions.Accept] or [conditions.Deny] and fill
// status.resources. Build your manager on a scheme with client-go's types,
// Liqo's and the SliceBudget's, each group's own AddToScheme (the SDK never
// writes your scheme), and register the handler for a class with
// [resourceslice.AddToManager] (one class) or a [resourceslice.ClassSet]
// (many classes, one set):
//
//	scheme := runtime.NewScheme()
//	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
//	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
//	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
//	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
//	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
//	if err != nil {
//		return err
//	}
//	h := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
//		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
//		conditions.Accept(rs, "Granted", "all requested resources granted")
//		return ctrl.Result{}, nil
//	})
//	if err := resourceslice.AddToManager(mgr, "gold", h); err != nil {
//		return err
//	}
//
// # How the packages fit
//
//   - handler: the Handler interface a policy implements, and its Func adapter.
//     It holds no controller machinery.
//   - conditions: nil-safe helpers that set a slice's Resources condition
//     (Accept, Deny), the one a class controller owns, and read it and the
//     Authentication condition Liqo sets.
//   - resourceslice: one way to build a class's controller, reached two
//     ways: a ClassSet, the one object the manager's classes share (Serve,
//     Stop, before or after start), and AddToManager (a set of one class).
//     Each refuses a scheme that lacks a type it reads or writes, naming
//     the group's AddToScheme to call. It fetches and filters slices, applies Liqo's tenant rule and
//     authentication gate, calls the handler (once at a time per slice),
//     validates its decision, writes only the status fields a class
//     controller owns with one optimistic-lock patch, records events and
//     exports metrics; AddUnservedReporter reports slices whose class nobody
//     serves (with class Leases, WithClassLease).
//   - budget: a finite capacity one or several classes draw from, counted
//     from what the cluster shows each slice holds (its Accepted offer and
//     Liqo's Quota for it), never over-committed; node pools whose total
//     follows the provider's nodes, per-consumer limits, a fair order
//     between consumers, cohorts of budgets that lend each other what they
//     leave idle, and budgets that follow a SliceBudget object
//     (FromObject). Attach one or more with resourceslice.WithBudget.
//   - api/v1alpha1: the SliceBudget API (preview), a budget declared as a
//     cluster-scoped object (kubectl get sb), validated by the API server;
//     its CRD is config/crd/sliceclass.io_slicebudgets.yaml (the Helm
//     chart ships it). budget.FromObject builds a budget that follows one
//     live and writes its status; the example manager's classes file
//     names one per class with sliceBudget.
//   - testing (package slicetest): a harness to unit-test a Handler by
//     running the real class controller on controller-runtime's fake client (with
//     fault injection: conflicts, lost answers), and slice builders.
//   - testing/controlplane: starts a real kube-apiserver and etcd with the
//     Liqo CRDs installed, for integration tests; testing/controlplane/
//     install-envtest builds their binaries from source.
//   - testing/envkit: what an integration test of your manager needs on that
//     control plane: start and stop the manager, waits that say what they
//     wait for, Ready nodes, tenant namespaces and Tenants, and Liqo's own
//     QuotaCreator beside your classes.
//   - flags: the standard manager command line (classes, metrics, probes,
//     leader election, decision events, class Leases, logging) that the Helm
//     chart renders, bound in one call from your main; and the parser for
//     resource lists given as flags.
//   - examples: policies to start from (cappedresources, pool, gpupool), the
//     example manager binary with its flags package and classes file
//     (examples/manager, deployed by the Helm chart in charts/), and a
//     self-contained demo on an embedded control plane (examples/demo, make
//     demo).
//
// # Testing a policy
//
// Build a harness with [github.com/sliceclass/sliceclass/testing.New] over
// a slice built by [github.com/sliceclass/sliceclass/testing.NewSlice] and
// reconcile it ([github.com/sliceclass/sliceclass/testing.Harness.Reconcile]);
// assert on the returned decision, resources, events and number of API
// writes. On a real API
// server, start your manager with
// [github.com/sliceclass/sliceclass/testing/envkit.StartManager]. The
// README and docs/ walk through each step, from a handler to deploying your
// own manager with the chart.
package sliceclass
