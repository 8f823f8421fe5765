package handler

import (
	"context"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owner is implemented by a handler whose grant needs objects in the
// provider cluster (a ConfigMap recording the grant, a PriorityClass, a
// NetworkPolicy for the consumer): the SDK makes them exist while the slice
// is Accepted by the class, and removes them when it is not.
//
// Owned returns the objects that must exist for rs, which is Accepted by the
// class; it is called after Handle on every reconcile of an Accepted slice,
// and must return the same objects for the same slice (a set, not a diff).
// It must not write to the cluster itself, nor change rs (changes are
// discarded). An error is retried with the class's backoff and prunes
// nothing. resourceslice.Consumer(ctx) is the slice's trusted consumer, as
// in Handle. Register an Owner with resourceslice.WithOwnedTypes naming the
// types it returns: without it, registration fails.
//
// What the SDK does with the set, on every reconcile:
//
//   - Apply. Each object is applied with server-side apply under the field
//     manager "sliceclass-<class>": the fields set in the returned object
//     are the fields the class owns, so a field dropped from a later return
//     is removed from the object. Status, resourceVersion, uid and the other
//     fields the API server sets are never applied. The object must be of a
//     type in the manager's scheme, have a name (generateName is not
//     supported: the name is how the next reconcile finds it again), have a
//     namespace exactly when its type is namespaced, and be unique in the
//     set. An object is sent again only when its content differs from what
//     the SDK last applied for the slice, or the object is no longer as
//     that apply left it (deleted or changed by someone else, or the
//     controller restarted): a reconcile that changes nothing applies
//     nothing.
//   - Labels. The SDK adds sliceclass.io/class=<class>,
//     sliceclass.io/slice-namespace, sliceclass.io/slice-name and
//     sliceclass.io/slice-uid naming the slice (a slice name longer than a
//     label value allows, 63 characters, is shortened with a hash suffix).
//     Other labels are kept. An object that already carries one of these
//     labels with another value (another class, another slice) is refused.
//   - ownerReference. An object in the slice's own namespace gets a
//     controller ownerReference to the slice (blockOwnerDeletion false), so
//     Kubernetes' garbage collector deletes it with the slice. Objects in
//     other namespaces and cluster-scoped objects cannot have one: the SDK
//     deletes them by label. An object that already has another controller
//     is refused. No finalizer is ever added, to the slice or to an object:
//     unpeering never waits for the class controller.
//   - Pruning. Objects applied earlier for this slice that the set no longer
//     holds are deleted, but only when every object of the set was applied:
//     a single failure prunes nothing, so a transient error never deletes
//     what a consumer relies on. Returning an empty set deletes them all.
//   - Removal. When the slice is Denied, leaves the class or is deleted, all
//     of its objects are deleted; a periodic sweep deletes the objects whose
//     slice is no longer Accepted by the class, including exits that
//     happened while the controller was down.
//   - Never a takeover. An object that already exists and was not applied
//     by this class for this slice (no sliceclass.io/class label, another
//     slice's, or another controller's) is left untouched and refused: the
//     slice gets a Warning event naming it, and nothing is pruned.
//
// RBAC: for each owned type, the manager's ServiceAccount needs get, list,
// create, patch and delete (create because server-side apply creates a
// missing object), plus watch when its reads go through the manager's cache.
// list is cluster-wide: stale objects are found by label across namespaces.
// blockOwnerDeletion false needs no permission on the slice.
//
// Declare that your handler implements Owner so that the compiler checks it:
//
//	var _ handler.Owner = (*Policy)(nil)
//
// Wrong: an Owner that creates the object itself, outside the SDK's apply.
// Nothing labels it, nothing prunes it, nothing deletes it with the grant.
//
//	func (p *Policy) Owned(ctx context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
//		cm := grantRecord(rs)
//		return nil, p.client.Create(ctx, cm) // leaks when the slice goes
//	}
//
// Right: return the object and let the SDK apply it.
//
//	func (p *Policy) Owned(ctx context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
//		return []client.Object{grantRecord(rs)}, nil
//	}
type Owner interface {
	Owned(ctx context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error)
}
