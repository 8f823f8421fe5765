// Package faults is the first part of the reliability suite: a class
// controller on a real kube-apiserver and etcd while its API calls fail (5xx
// before and after the server applied a write, 429 with Retry-After, refused
// watches, failing event writes) and while its API server restarts. Each
// test proves that every slice is decided, once, without losing a field
// Liqo wrote, and prints its figures on one line starting "RELIABILITY:".
//
// Run it with
//
//	go test -race -v ./test/reliability/faults/
//
// FAULTS_SEED (an integer) replays the fault sequence of a logged seed.
package faults
