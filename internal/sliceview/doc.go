// Package sliceview reads what the cluster says about a ResourceSlice that
// the pinned Liqo Go types cannot: its effective class (status.class, read
// through a narrow cache of class views where the API server publishes it)
// and its trusted consumer (its namespace's liqo.io/remote-cluster-id,
// read from the manager's namespace informer). The classes and the
// budgets' feeds both read them, so they can never disagree. It also
// builds the SDK's narrow caches (one kind each, decoded into a type that
// holds only what the SDK reads).
package sliceview
