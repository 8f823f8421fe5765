// Package controlplane starts a real control plane (kube-apiserver and etcd,
// through controller-runtime's envtest) with Liqo's authentication CRDs
// installed, for integration tests of a class controller and for demos.
//
// The CRDs are read from the Liqo module the program is built with
// (deployments/liqo/charts/liqo-crds/crds/), so they always match the Go
// types. The binaries come from KUBEBUILDER_ASSETS; in the sliceclass repo
// `make envtest` builds them from source into bin/envtest, where Start also
// looks.
package controlplane
