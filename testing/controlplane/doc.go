// Package controlplane starts a real control plane (kube-apiserver and etcd,
// through controller-runtime's envtest) with Liqo's authentication CRDs
// installed, for integration tests of a class controller and for demos.
//
// The CRDs are read from the Liqo module the program is built with
// (deployments/liqo/charts/liqo-crds/crds/), so they always match the Go
// types. The binaries are looked up by AssetsDir: KUBEBUILDER_ASSETS, then
// bin/envtest in an enclosing directory (where `make envtest` builds them in
// the sliceclass repo), then a per-user cache. From your own module, fill
// that cache once with
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/install-envtest
//
// which builds etcd and kube-apiserver from source through the Go module
// proxy and prints their directory. Without binaries Start skips the test,
// naming that command; with SLICECLASS_REQUIRE_ENVTEST set it fails instead.
package controlplane
