package resourceslice

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// consumerKey is the context key of the slice's trusted consumer.
type consumerKey struct{}

// consumerInfo is the trusted consumer of the slice being decided, and
// whether it came from the namespace's label.
type consumerInfo struct {
	id       string
	labelled bool
}

// Consumer returns, inside Handle, the slice's trusted consumer: its
// namespace's liqo.io/remote-cluster-id label (set by the provider's Liqo on
// every tenant namespace) or, in a namespace without it, the namespace
// itself. A consumer's credentials reach only its tenant namespace, so it
// can neither choose nor switch this value, unlike the IDs it writes on its
// slice (see consumerID). Consumer limits (budget.WithConsumerLimit) and a
// budget's fair order key on the same value. It returns "" outside Handle.
func Consumer(ctx context.Context) string {
	c, _ := ctx.Value(consumerKey{}).(consumerInfo)
	return c.id
}

func withConsumer(ctx context.Context, c consumerInfo) context.Context {
	return context.WithValue(ctx, consumerKey{}, c)
}

// consumerOf reads the trusted consumer of rs from its namespace, through
// the Reconciler's reader (the cache, with a manager).
func (r *Reconciler) consumerOf(ctx context.Context, rs *authv1beta1.ResourceSlice) (consumerInfo, error) {
	return namespaceConsumer(ctx, r.client, rs.Namespace)
}

// namespaceConsumer is the consumer of namespace ns: its
// liqo.io/remote-cluster-id label, or ns; a namespace not found is its own
// consumer.
func namespaceConsumer(ctx context.Context, c client.Reader, ns string) (consumerInfo, error) {
	meta := namespaceMetadata()
	switch err := c.Get(ctx, types.NamespacedName{Name: ns}, meta); {
	case err == nil:
		if id := meta.Labels[labelRemoteClusterID]; id != "" {
			return consumerInfo{id: id, labelled: true}, nil
		}
	case apierrors.IsNotFound(err):
	default:
		return consumerInfo{}, fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	return consumerInfo{id: ns}, nil
}
