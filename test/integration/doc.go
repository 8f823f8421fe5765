// Package integration holds the SDK's integration suite: every behaviour
// that depends on the API server (schemas, resourceVersions, a second writer,
// the server's own request metrics) proven on a real kube-apiserver and etcd.
package integration
