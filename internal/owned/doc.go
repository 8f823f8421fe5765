// Package owned applies, prunes and deletes the objects a class's handler
// owns for its Accepted slices (handler.Owner): server-side apply under the
// class's field manager, labels naming the class and the slice, a controller
// ownerReference to the slice where the API allows one (same namespace),
// pruning only after every apply of the set succeeded, and a label sweep for
// what no ownerReference can reach (other namespaces, cluster-scoped
// objects, slices gone while the controller was down). It never adds a
// finalizer and never takes over an object it did not make.
//
// One Applier serves one class and may be used by several workers at once.
package owned
