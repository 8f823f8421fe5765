// Package charttest tests the sliceclass-manager Helm chart: it renders the
// chart with helm's own engine, applies what it renders to a real API server
// (kube-apiserver and etcd, through testing/controlplane), and checks the
// result against what the repository proves elsewhere: the manager's own
// flag set (examples/manager/flags), the least-privilege RBAC of
// examples/manager/deploy/rbac.yaml (proven by test/reliability/privilege),
// the admission policy of examples/manager/deploy/admission-policy.yaml, the
// image `make image` writes, and the metrics the SDK exports.
//
// It is a module of its own, so that helm's dependencies stay out of the
// SDK's go.mod. Run it with `make chart-test`.
package charttest
