// Package envkit is what an integration test of your manager needs on a
// real control plane (package github.com/sliceclass/sliceclass/testing/controlplane),
// beyond the slices themselves: start a manager and stop it cleanly, wait
// for something and say what, Ready nodes with allocatable and labels,
// tenant namespaces and Tenants for a consumer, and Liqo's own
// QuotaCreator running beside your classes.
//
// The three test packages split the work as controller-runtime splits
// pkg/client/fake from pkg/envtest:
//
//   - github.com/sliceclass/sliceclass/testing (package slicetest): slice
//     builders (NewSlice leaves a slice as Liqo leaves it: replicated labels,
//     Authentication Accepted), the fake-client harness for unit tests, and
//     CreateAsLiqo / WaitForDecision, which play Liqo's part on an API server;
//   - testing/controlplane: kube-apiserver and etcd with Liqo's CRDs;
//   - testing/envkit (this package): the manager and the cluster around the
//     slices.
//
// A test of a class on a pool of nodes reads:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.RunSuite(m, &cp)) }
//
//	func TestGoldOnAPool(t *testing.T) {
//		cp.Require(t)
//		ctx := context.Background()
//		ns, err := envkit.CreateConsumer(ctx, cp.Client, "alice")
//		require.NoError(t, err)
//		_, err = envkit.CreateNode(ctx, cp.Client, "n1", corev1.ResourceList{"cpu": resource.MustParse("8")},
//			envkit.WithNodeLabels(map[string]string{"pool": "gold"}))
//		require.NoError(t, err)
//		envkit.StartManager(t, cp, func(mgr manager.Manager) error {
//			return resourceslice.AddToManager(mgr, "gold", myPolicy)
//		})
//		rs := slicetest.NewSlice("s1", slicetest.WithNamespace(ns), slicetest.WithConsumer("alice"),
//			slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))
//		require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
//		envkit.Eventually(t, "s1 decided", func() bool { ... })
//	}
//
// The waits run their condition on the test's goroutine, so a condition may
// call require (t.FailNow) and read the test's state freely; testify's
// require.Eventually runs it on a goroutine of its own, where FailNow is not
// allowed.
//
// Every wait for something to happen (Eventually, StartManager's wait for
// the cache, Stop's wait for the manager) returns as soon as it holds and
// gives up after one deadline, WaitTimeout, far past what a loaded CI
// machine takes: a test says that something happens, a benchmark says how
// fast. Use WaitTimeout for your own waits too. Waits for nothing to happen
// (Consistently, Holds) take their duration from the caller.
//
// The package imports no other package of the SDK but testing/controlplane
// (and internal/testwait, the deadline it shares with the SDK's own tests),
// so that any test, the SDK's own included, may import it.
package envkit
