// Command dev-controlplane runs the control plane of
// github.com/sliceclass/sliceclass/testing/controlplane (kube-apiserver and
// etcd with Liqo's CRDs and SliceBudget's) for you to run your own manager
// against, with no cluster. From your module:
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/dev-controlplane
//
// It starts the control plane, writes an administrator's kubeconfig for it
// to dev-controlplane.kubeconfig in the current directory (-kubeconfig
// moves it), prints how to run a manager against it, how to create a slice
// there with kubectl and how to list what each slice got, and runs until
// interrupted (Ctrl-C, SIGTERM). It then stops its controllers and the
// control plane and removes the kubeconfig, which holds the administrator's
// key and is useless once the control plane is gone. A kubeconfig it did
// not write is never overwritten.
//
// It plays Liqo's part on a provider, in the same process:
//
//   - for each consumer of -consumers (cluster IDs, comma separated; default
//     acme,globex), the tenant namespace liqo-tenant-<consumer> that Liqo
//     creates when a consumer peers, made by Liqo's own tenant namespace
//     manager (labels liqo.io/remote-cluster-id, liqo.io/tenant-namespace and
//     the Pod Security ones), with an Active Tenant in it;
//   - the authentication of a replicated slice (labels liqo.io/originID and
//     liqo.io/replicated: "true") created in its consumer's tenant namespace:
//     the Authentication condition Accepted and authParams, as Liqo's
//     ResourceSlice controller writes them, and Denied for a slice in another
//     namespace. It never writes Resources. Liqo's own controller cannot run
//     here: it takes only slices carrying a CSR signed by the consumer's key,
//     and has the certificate issued by kube-controller-manager's signer,
//     which the control plane lacks;
//   - Liqo's own QuotaCreator: a Quota for each Accepted replicated slice.
//
// The binaries are found as the package finds them (KUBEBUILDER_ASSETS,
// bin/envtest in an enclosing directory, then the per-user cache); without
// them it exits 1 naming the command that builds them:
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/install-envtest
//
// In the sliceclass repo, `make dev-controlplane` builds them first.
package main
