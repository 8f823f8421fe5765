// Command dev-controlplane runs the control plane of
// github.com/sliceclass/sliceclass/testing/controlplane (kube-apiserver and
// etcd with Liqo's CRDs and SliceBudget's) for you to run your own manager
// against, with no cluster. From your module:
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/dev-controlplane
//
// It starts the control plane, writes an administrator's kubeconfig for it
// to dev-controlplane.kubeconfig in the current directory (-kubeconfig
// moves it), prints how to run a manager against it and how to create a
// slice there with kubectl, as Liqo would, and runs until interrupted
// (Ctrl-C, SIGTERM). It then stops the control plane and removes the
// kubeconfig, which holds the administrator's key and is useless once the
// control plane is gone. A kubeconfig it did not write is never
// overwritten.
//
// The binaries are found as the package finds them (KUBEBUILDER_ASSETS,
// bin/envtest in an enclosing directory, then the per-user cache); without
// them it exits 1 naming the command that builds them:
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/install-envtest
//
// In the sliceclass repo, `make dev-controlplane` builds them first.
package main
