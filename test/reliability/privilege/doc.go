// Package privilege is the least-privilege part of the reliability suite: it
// runs the example manager's binary (examples/manager) on a real
// kube-apiserver that authorizes with RBAC, authenticated as the
// ServiceAccount of examples/manager/deploy/, after applying the RBAC
// objects of examples/manager/deploy/rbac.yaml.
//
// TestShippedRoleSuffices proves the shipped role is enough: the manager
// decides slices (within caps, beyond caps, with nothing requested, beyond
// its budget, claiming another consumer, of a drained and re-activated
// Tenant) with leader election on, holds and renews its leader-election
// Lease and its class Lease, records its events, deletes its class Lease on
// SIGTERM and exits 0, and the API server answers none of its requests with
// 403. TestEveryRuleIsNeeded proves the role holds nothing more: each
// variant that drops one verb, one resource or one API group from one rule
// makes the same scenario fail, with a 403 or a missing outcome.
//
// Figures are printed on lines starting "RELIABILITY:". Run it with
//
//	go test -race -v ./test/reliability/privilege/
package privilege
