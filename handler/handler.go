package handler

import (
	"context"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Handler decides the offer for one ResourceSlice of the class it serves.
//
// Handle receives a deep copy of the cached slice; it may change it freely.
// On a nil error, the SDK saves only the fields a class controller owns:
//
//   - the Resources condition (it must be set to Accepted or Denied, e.g. with
//     conditions.Accept or conditions.Deny; no decision is a contract error);
//   - status.resources (no negative quantities);
//   - status.storageClasses, status.ingressClasses,
//     status.loadBalancerClasses, status.nodeLabels, status.nodeSelector.
//
// Everything else is discarded, with a Warning event if it was changed: spec,
// metadata, the Authentication condition and status.authParams belong to
// Liqo. On a non-nil error every change is discarded, a Warning event carries
// the error text and the slice is retried with backoff, unless the error is
// wrapped by reconcile.TerminalError. A business "no" is a decision (Deny),
// not an error.
//
// Result.RequeueAfter is honoured, e.g. to re-check an external capacity
// source. Handle may be called concurrently for different slices when the
// controller runs more than one worker; it is never called for a slice being
// deleted, nor, by default, for one whose authentication is not Accepted or
// whose tenant is drained or cordoned.
//
// Wrong, the SDK refuses it: the handler writes the slice itself.
//
//	func (p *Policy) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
//		conditions.Accept(rs, "Granted", "")
//		return ctrl.Result{}, p.client.Status().Update(ctx, rs) // clobbers Liqo's fields
//	}
//
// Right: the handler only decides, the SDK saves.
//
//	func (p *Policy) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
//		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
//		conditions.Accept(rs, "Granted", "")
//		return ctrl.Result{}, nil
//	}
type Handler interface {
	Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error)
}

// Func adapts an ordinary function to a Handler.
type Func func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error)

var _ Handler = Func(nil)

// Handle calls f(ctx, rs).
func (f Func) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	return f(ctx, rs)
}

// Releaser is implemented by a handler that reserves something outside the
// cluster for an Accepted slice (a node pool, a cloud quota, a billing
// record) and must give it back. The SDK calls Release after a slice of the
// class that was Accepted is deleted, becomes Denied (by the handler, the
// tenant rule or a budget), or leaves the class: once per exit, not on every
// reconcile. An error is retried with the class's backoff, so Release must
// be idempotent. No finalizer is involved: a slice is never kept from
// deletion, so Release runs after the slice is gone (at least once while the
// controller runs; through Inventory for exits that happened while it was
// down). resourceslice.Consumer(ctx) is the slice's trusted consumer when
// the SDK still found the slice (it was Denied or left the class), and ""
// when it is gone.
type Releaser interface {
	Release(ctx context.Context, key types.NamespacedName) error
}

// Inventory is implemented, with Releaser, by a handler that can list what
// it holds. The SDK calls Holding once the cache has synced and then at the
// resync period, and releases every key whose slice is gone or no longer
// Accepted in the class: that covers slices deleted while the controller was
// down.
type Inventory interface {
	Holding(ctx context.Context) ([]types.NamespacedName, error)
}
