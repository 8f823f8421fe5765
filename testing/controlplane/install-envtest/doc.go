// Command install-envtest builds the control-plane binaries that
// github.com/sliceclass/sliceclass/testing/controlplane starts, etcd and
// kube-apiserver, from source through the Go module proxy, into a per-user
// cache where controlplane.Start finds them. Run it from any module that
// requires sliceclass:
//
//	go run github.com/sliceclass/sliceclass/testing/controlplane/install-envtest
//
// It builds etcd v3.6.8 and kube-apiserver v1.35.3 into
// <cache>/sliceclass/envtest/k8s-v1.35.3-etcd-v3.6.8, where <cache> is
// os.UserCacheDir ($XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on
// macOS), and prints that directory on the last line of its standard output,
// ready to export as KUBEBUILDER_ASSETS. A binary already there that reports
// the wanted version is kept, so a second run takes a second.
//
// Each build happens in a throwaway module under <root>/src: etcd through
// `go get -tool`, kube-apiserver through k8s.io/kubernetes with its staging
// modules (k8s.io/api, k8s.io/apiserver, ...) replaced by their published
// v0.x versions. Standard error gets one line per phase with the seconds
// elapsed since the start; the go tool's own output goes to build.log in the
// component's work directory, and its tail is printed only when a step fails.
// A cold build (empty module and build caches) costs about 19 CPU-minutes,
// three quarters of them compiling kube-apiserver: about 10 minutes on an
// otherwise idle 2-core machine, much longer on a busy one.
//
// The environment variable SLICECLASS_ENVTEST_DIR replaces
// <cache>/sliceclass/envtest as the root of the cache (binaries and work
// directories); controlplane looks there too. Flags:
//
//	-dir DIR             root of the cache (default: $SLICECLASS_ENVTEST_DIR or <cache>/sliceclass/envtest)
//	-etcd-version V      etcd version to build (default v3.6.8)
//	-kube-version V      kube-apiserver version to build (default v1.35.3)
//	-kubectl             also build kubectl of that version beside them
//
// kubectl is optional: a test that runs kubectl commands (the sliceclass
// repo's on-call walk of docs/budgets.md) finds it there on a machine that
// has none, and it is kept like the others while it reports its version
// (`kubectl version --client`). It is built as kube-apiserver is, through
// k8s.io/kubernetes, in a throwaway module of its own.
//
// The sliceclass repo's `make envtest` (hack/envtest.sh) runs this command
// with -dir set to its own cache, and -kubectl.
package main
