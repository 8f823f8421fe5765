package resourceslice

import (
	"context"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// consumerKey is the context key of the slice's trusted consumer.
type consumerKey struct{}

// consumerInfo is the trusted consumer of the slice being decided, and
// whether it came from the namespace's label.
type consumerInfo = sliceview.Consumer

// Consumer returns the trusted consumer of the slice a handler is called
// for: its namespace's liqo.io/remote-cluster-id label (set by the
// provider's Liqo on every tenant namespace) or, in a namespace without it,
// the namespace itself. A consumer's credentials reach only its tenant
// namespace, so it can neither choose nor switch this value, unlike the IDs
// it writes on its slice (see consumerID). Consumer limits
// (budget.WithConsumerLimit) and a budget's fair order key on the same
// value.
//
// It is set inside Handle, inside handler.Owner's Owned, and inside
// handler.Releaser's Release when the reconcile that releases found the
// slice (it was Denied, or left the class). It returns "" inside a Release
// for a slice already gone (the key is all that is left: record the
// consumer when you grant, e.g. in Owned), and outside these calls.
func Consumer(ctx context.Context) string {
	c, _ := ctx.Value(consumerKey{}).(consumerInfo)
	return c.ID
}

func withConsumer(ctx context.Context, c consumerInfo) context.Context {
	return context.WithValue(ctx, consumerKey{}, c)
}

// consumerOf reads the trusted consumer of rs from its namespace, through
// the reconciler's reader (the cache, with a manager).
func (r *classReconciler) consumerOf(ctx context.Context, rs *authv1beta1.ResourceSlice) (consumerInfo, error) {
	if s := r.namespaces; s != nil {
		if c, ok := s.Consumer(ctx, rs.Namespace); ok {
			return c, nil
		}
	}
	return sliceview.ReadConsumer(ctx, r.client, rs.Namespace)
}
