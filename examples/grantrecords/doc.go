// Package grantrecords is an example class policy that owns objects for its
// grants (handler.Owner): for each slice the class Accepts, a ConfigMap in
// an accounting namespace recording the grant (the slice's namespace, name
// and UID, and the resources granted), and a cluster-scoped PriorityClass
// for the consumer's pods.
//
// The decision is kept simple: the policy grants what the slice asks, or
// lets another handler decide (WithHandler). The objects are the SDK's to
// apply, label, prune and delete: the policy only says which must exist.
// Neither object is in the slice's namespace, so neither can have an
// ownerReference to the slice: the SDK deletes them by label when the slice
// is Denied, leaves the class or is deleted.
//
// The manager's ServiceAccount needs, on configmaps and on priorityclasses
// (scheduling.k8s.io): get, list, create, patch and delete, plus watch when
// its reads go through the manager's cache. The accounting namespace must
// exist.
package grantrecords
