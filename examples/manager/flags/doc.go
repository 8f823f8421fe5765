// Package flags is the example manager's command line: the SDK's standard
// flags (package github.com/sliceclass/sliceclass/flags, which any manager
// can bind) and the capped policy's own (--cap, --budget,
// --grant-records-namespace). It is importable so that what deploys the
// manager (the Helm chart's tests, say) can check its arguments with the
// very flags the binary accepts, instead of a copy that drifts.
//
// It only parses: the manager checks the values (caps, budgets, class
// names) once they are parsed.
package flags
