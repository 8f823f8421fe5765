package resourceslice

import (
	"context"
	"fmt"
	"sync/atomic"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	return c.id
}

func withConsumer(ctx context.Context, c consumerInfo) context.Context {
	return context.WithValue(ctx, consumerKey{}, c)
}

// consumerOf reads the trusted consumer of rs from its namespace, through
// the Reconciler's reader (the cache, with a manager).
func (r *Reconciler) consumerOf(ctx context.Context, rs *authv1beta1.ResourceSlice) (consumerInfo, error) {
	if s := r.namespaces; s != nil {
		if c, ok := s.consumer(ctx, rs.Namespace); ok {
			return c, nil
		}
	}
	return namespaceConsumer(ctx, r.client, rs.Namespace)
}

// namespaceStore reads namespaces' consumer labels straight from the
// manager's namespace informer, without the copy (and, with a namespaced
// cache, the REST mapping) a cache read costs on every reconcile and every
// slice event a budget's feed sees.
type namespaceStore struct {
	cache cache.Cache
	idx   atomic.Pointer[toolscache.Indexer]
	// none is set when the informer has no store to read (not a shared
	// index informer): then every read goes through the client.
	none atomic.Bool
}

// consumer returns namespace ns's consumer; ok is false when the store
// cannot answer (not synced yet, or no store), and the caller reads through
// its client.
func (s *namespaceStore) consumer(ctx context.Context, ns string) (consumerInfo, bool) {
	idx := s.indexer(ctx)
	if idx == nil {
		return consumerInfo{}, false
	}
	o, exists, err := idx.GetByKey(ns)
	if err != nil {
		return consumerInfo{}, false
	}
	if exists {
		if m, ok := o.(metav1.Object); ok {
			if id := m.GetLabels()[labelRemoteClusterID]; id != "" {
				return consumerInfo{id: id, labelled: true}, true
			}
		}
	}
	return consumerInfo{id: ns}, true
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

// indexer is the namespace informer's store once it has synced; nil before,
// or when there is none.
func (s *namespaceStore) indexer(ctx context.Context) toolscache.Indexer {
	if p := s.idx.Load(); p != nil {
		return *p
	}
	if s.none.Load() {
		return nil
	}
	inf, err := s.cache.GetInformer(ctx, namespaceMetadata(), cache.BlockUntilSynced(false))
	if err != nil {
		return nil
	}
	si, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		s.none.Store(true)
		return nil
	}
	if !si.HasSynced() {
		return nil
	}
	idx := si.GetIndexer()
	s.idx.Store(&idx)
	return idx
}
