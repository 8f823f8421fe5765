// Package resourceslice runs a Handler as a class controller for Liqo
// ResourceSlices.
//
// AddToManager registers one controller per class in a controller-runtime
// manager, named "resourceslice-<class>". Each controller:
//
//   - watches ResourceSlices replicated from a consumer (by default, label
//     liqo.io/originID exists and liqo.io/replicated=true) whose class, on the
//     old or the new object, is its own;
//   - skips slices being deleted, and by default waits until Liqo sets the
//     Authentication condition to Accepted;
//   - by default applies Liqo's tenant rule before calling the handler: a
//     Drained tenant's slices are Denied, a Cordoned tenant's undecided slices
//     are Denied, its decided ones are left alone; Tenant changes re-evaluate
//     the tenant's slices;
//   - calls the handler on a deep copy and validates its decision;
//   - merges only the status fields a class controller owns onto the cached
//     object and, when something changed, saves them with one status merge
//     patch that carries the resourceVersion (optimistic lock); when nothing
//     changed it makes no API call;
//   - records an event on each decision transition and exports metrics.
//
// Owned by a class controller: the Resources condition, status.resources,
// status.storageClasses, status.ingressClasses, status.loadBalancerClasses,
// status.nodeLabels and status.nodeSelector. Never written: spec, metadata,
// the Authentication condition, status.authParams, and any status field the
// pinned Liqo types do not know.
package resourceslice
