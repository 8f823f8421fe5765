package sliceview

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelRemoteClusterID is the label Liqo sets on a tenant namespace (and
// its Tenant) with the consumer's cluster ID.
const LabelRemoteClusterID = "liqo.io/remote-cluster-id"

// Consumer is the trusted consumer of a slice: its namespace's
// LabelRemoteClusterID, or the namespace itself; Labelled says it came
// from the label.
type Consumer struct {
	ID       string
	Labelled bool
}

// NewNamespaces returns a namespace store over c, the manager's cache:
// the store holds no objects of its own, only the informer's indexer once
// it has synced, so every class and feed may build one.
func NewNamespaces(c cache.Cache) *Namespaces { return &Namespaces{cache: c} }

// Namespaces reads namespaces' consumer labels straight from the
// manager's namespace informer, without the copy (and, with a namespaced
// cache, the REST mapping) a cache read costs on every reconcile and every
// slice event a budget's feed sees.
type Namespaces struct {
	cache cache.Cache
	idx   atomic.Pointer[toolscache.Indexer]
	// none is set when the informer has no store to read (not a shared
	// index informer): then every read goes through the client.
	none atomic.Bool
}

// Consumer returns namespace ns's consumer; ok is false when the store
// cannot answer (not synced yet, or no store), and the caller reads through
// its client.
func (s *Namespaces) Consumer(ctx context.Context, ns string) (Consumer, bool) {
	idx := s.indexer(ctx)
	if idx == nil {
		return Consumer{}, false
	}
	o, exists, err := idx.GetByKey(ns)
	if err != nil {
		return Consumer{}, false
	}
	if exists {
		if m, ok := o.(metav1.Object); ok {
			if id := m.GetLabels()[LabelRemoteClusterID]; id != "" {
				return Consumer{ID: id, Labelled: true}, true
			}
		}
	}
	return Consumer{ID: ns}, true
}

// ReadConsumer is the consumer of namespace ns: its
// liqo.io/remote-cluster-id label, or ns; a namespace not found is its own
// consumer.
func ReadConsumer(ctx context.Context, c client.Reader, ns string) (Consumer, error) {
	meta := NamespaceMetadata()
	switch err := c.Get(ctx, types.NamespacedName{Name: ns}, meta); {
	case err == nil:
		if id := meta.Labels[LabelRemoteClusterID]; id != "" {
			return Consumer{ID: id, Labelled: true}, nil
		}
	case apierrors.IsNotFound(err):
	default:
		return Consumer{}, fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	return Consumer{ID: ns}, nil
}

// indexer is the namespace informer's store once it has synced; nil before,
// or when there is none.
func (s *Namespaces) indexer(ctx context.Context) toolscache.Indexer {
	if p := s.idx.Load(); p != nil {
		return *p
	}
	if s.none.Load() {
		return nil
	}
	inf, err := s.cache.GetInformer(ctx, NamespaceMetadata(), cache.BlockUntilSynced(false))
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

// NamespaceMetadata is the object the namespace watch and read use: only
// metadata is cached.
func NamespaceMetadata() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}
