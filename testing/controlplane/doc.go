// Package controlplane starts a real control plane (kube-apiserver and etcd,
// through controller-runtime's envtest) with Liqo's authentication CRDs and
// sliceclass's SliceBudget CRD installed, for integration tests of a class
// controller and for demos.
//
// Liqo's CRDs are read from the Liqo module the program is built with
// (deployments/liqo/charts/liqo-crds/crds/), the SliceBudget CRD is the one
// embedded in config/crd, so they always match the Go types. The binaries are looked up by AssetsDir: KUBEBUILDER_ASSETS, then
// bin/envtest in an enclosing directory (where `make envtest` builds them in
// the sliceclass repo), then a per-user cache. From your own module, fill
// that cache once with
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/install-envtest
//
// which builds etcd and kube-apiserver from source through the Go module
// proxy and prints their directory.
//
// # One control plane per test, or one per package
//
// Start gives a test a control plane of its own and stops it when the test
// ends. On Linux, etcd and kube-apiserver also die with the process that
// started them however it ends (killed, timed out): they run under util-linux's
// setpriv --pdeathsig, where it is installed (every Debian and Ubuntu). RunSuite, as a TestMain body, shares one across a package; each test
// that uses it says so first with Require, so the package's unit tests (of a
// Handler on the fake client, of a parser) share the package:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.RunSuite(m, &cp)) }
//
//	func TestGoldOnAServer(t *testing.T) {
//		cp.Require(t)
//		// ... cp.Client, cp.Config
//	}
//
// Under -short no control plane is started: Start and Require skip the
// test, and the unit tests run. Without binaries they skip too, naming the
// command that builds them, and RunSuite prints on standard error how many
// tests it skipped and why ("controlplane: 12 tests skipped: no envtest
// binaries ..."), which a plain go test in the package's directory shows
// without -v. With SLICECLASS_REQUIRE_ENVTEST set (as in CI), missing
// binaries fail instead.
//
// # A control plane for your manager
//
// WriteKubeconfig writes a kubeconfig for the control plane's Config, or for
// a user of AddUser, so that a manager run as a program reaches it. To run
// your own manager against a control plane from the command line, the
// dev-controlplane command starts one, writes its kubeconfig and runs until
// interrupted:
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/dev-controlplane
package controlplane
