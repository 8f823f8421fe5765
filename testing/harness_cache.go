package slicetest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// watchCache is the harness's manager cache: the informers the SDK's
// sources, budget feeds and Tenant index register on, over the fake
// client. Where a shared informer's watch delivers events on its own
// goroutines, this one delivers them when the harness syncs it (before and
// after each reconcile): the events of every change since the last sync,
// in one pass, on the syncing goroutine. Reads are served from the
// informers' stores as of the last sync, as a manager's cache serves them.
type watchCache struct {
	scheme *runtime.Scheme
	api    client.Reader // the fake API server, uncached

	mu        sync.Mutex
	informers map[informerKey]*watchInformer
	indexes   map[schema.GroupVersionKind]map[string]client.IndexerFunc

	// delivery serializes event delivery: a handler added while a sync
	// delivers sees the store after it.
	delivery sync.Mutex
}

var _ cache.Cache = &watchCache{}

// informerKey tells a typed informer from a metadata-only one of the same
// kind.
type informerKey struct {
	gvk      schema.GroupVersionKind
	metadata bool
}

func newWatchCache(scheme *runtime.Scheme, api client.Reader) *watchCache {
	return &watchCache{
		scheme: scheme, api: api,
		informers: map[informerKey]*watchInformer{},
		indexes:   map[schema.GroupVersionKind]map[string]client.IndexerFunc{},
	}
}

func (c *watchCache) keyOf(obj runtime.Object) (informerKey, error) {
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		return informerKey{gvk: o.GroupVersionKind(), metadata: true}, nil
	case *metav1.PartialObjectMetadataList:
		gvk := o.GroupVersionKind()
		gvk.Kind = trimList(gvk.Kind)
		return informerKey{gvk: gvk, metadata: true}, nil
	}
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return informerKey{}, err
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = trimList(gvk.Kind)
	}
	return informerKey{gvk: gvk}, nil
}

func trimList(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}

// informer returns the informer of k, listing the fake API server the
// first time (an informer is synced once it exists).
func (c *watchCache) informer(ctx context.Context, k informerKey) (*watchInformer, error) {
	c.mu.Lock()
	inf := c.informers[k]
	c.mu.Unlock()
	if inf != nil {
		return inf, nil
	}
	// Not under delivery: a handler may read a kind not read before.
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf := c.informers[k]; inf != nil {
		return inf, nil
	}
	objs, err := c.listAPI(ctx, k)
	if err != nil {
		return nil, err
	}
	inf = &watchInformer{key: k, store: objs}
	c.informers[k] = inf
	return inf, nil
}

// listAPI lists every object of k from the fake API server, by key.
func (c *watchCache) listAPI(ctx context.Context, k informerKey) (map[string]client.Object, error) {
	var list client.ObjectList
	listGVK := k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List")
	if k.metadata {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(listGVK)
		list = l
	} else {
		o, err := c.scheme.New(listGVK)
		if err != nil {
			return nil, fmt.Errorf("slicetest: no list type for %s: %w", k.gvk, err)
		}
		list = o.(client.ObjectList)
	}
	if err := c.api.List(ctx, list); err != nil {
		return nil, fmt.Errorf("slicetest: listing %s: %w", k.gvk, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make(map[string]client.Object, len(items))
	for _, it := range items {
		o := it.(client.Object)
		if k.metadata {
			o.(*metav1.PartialObjectMetadata).SetGroupVersionKind(k.gvk)
		}
		out[storeKey(o)] = o
	}
	return out, nil
}

func storeKey(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// sync delivers the events of every change on the fake API server since
// the last sync: namespaces first (a slice's consumer is its namespace's
// label), then every other kind in a fixed order.
func (c *watchCache) sync(ctx context.Context) error {
	c.delivery.Lock()
	defer c.delivery.Unlock()
	c.mu.Lock()
	infs := make([]*watchInformer, 0, len(c.informers))
	for _, inf := range c.informers {
		infs = append(infs, inf)
	}
	c.mu.Unlock()
	sort.Slice(infs, func(i, j int) bool { return infs[i].order() < infs[j].order() })
	for _, inf := range infs {
		now, err := c.listAPI(ctx, inf.key)
		if err != nil {
			return err
		}
		inf.deliver(c.swap(inf, now))
	}
	return nil
}

// swap replaces inf's store with now and returns the events between them.
func (c *watchCache) swap(inf *watchInformer, now map[string]client.Object) []watchEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var evs []watchEvent
	for _, k := range sortedKeys(now) {
		was, ok := inf.store[k]
		switch {
		case !ok:
			evs = append(evs, watchEvent{new: now[k]})
		case was.GetResourceVersion() != now[k].GetResourceVersion() || was.GetUID() != now[k].GetUID():
			evs = append(evs, watchEvent{old: was, new: now[k]})
		}
	}
	for _, k := range sortedKeys(inf.store) {
		if _, ok := now[k]; !ok {
			evs = append(evs, watchEvent{old: inf.store[k]})
		}
	}
	inf.store = now
	return evs
}

func sortedKeys(m map[string]client.Object) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Get implements client.Reader from the informer's store.
func (c *watchCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	k, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	inf, err := c.informer(ctx, k)
	if err != nil {
		return err
	}
	c.mu.Lock()
	stored, ok := inf.store[storeKey(keyed(key))]
	c.mu.Unlock()
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: k.gvk.Group, Resource: k.gvk.Kind}, key.Name)
	}
	return copyInto(stored, obj)
}

func keyed(key client.ObjectKey) client.Object {
	o := &metav1.PartialObjectMetadata{}
	o.SetNamespace(key.Namespace)
	o.SetName(key.Name)
	return o
}

// copyInto copies src into dst, of the same Go type, as a cache read does.
func copyInto(src, dst runtime.Object) error {
	cp := src.DeepCopyObject()
	sv, dv := reflect.ValueOf(cp), reflect.ValueOf(dst)
	if sv.Type() != dv.Type() {
		return fmt.Errorf("slicetest: cannot read a %T into a %T", src, dst)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

// List implements client.Reader from the informer's store: namespace,
// label selector and exact field selectors (metadata.name,
// metadata.namespace, and fields indexed with IndexField).
func (c *watchCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	k, err := c.keyOf(list)
	if err != nil {
		return err
	}
	inf, err := c.informer(ctx, k)
	if err != nil {
		return err
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	var items []runtime.Object
	for _, key := range sortedKeys(inf.store) {
		o := inf.store[key]
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		if lo.FieldSelector != nil {
			ok, err := c.fieldsMatch(k.gvk, o, lo)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		items = append(items, o.DeepCopyObject())
	}
	return meta.SetList(list, items)
}

func (c *watchCache) fieldsMatch(gvk schema.GroupVersionKind, o client.Object, lo *client.ListOptions) (bool, error) {
	for _, req := range lo.FieldSelector.Requirements() {
		var values []string
		switch req.Field {
		case "metadata.name":
			values = []string{o.GetName()}
		case "metadata.namespace":
			values = []string{o.GetNamespace()}
		default:
			extract := c.indexes[gvk][req.Field]
			if extract == nil {
				return false, fmt.Errorf("slicetest: List of %s by field %s, which no IndexField indexed", gvk, req.Field)
			}
			values = extract(o)
		}
		found := false
		for _, v := range values {
			found = found || v == req.Value
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// GetInformer implements cache.Informers.
func (c *watchCache) GetInformer(ctx context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	k, err := c.keyOf(obj)
	if err != nil {
		return nil, err
	}
	inf, err := c.informer(ctx, k)
	if err != nil {
		return nil, err
	}
	return &informerHandle{c: c, inf: inf}, nil
}

// GetInformerForKind implements cache.Informers.
func (c *watchCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, _ ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.informer(ctx, informerKey{gvk: gvk})
	if err != nil {
		return nil, err
	}
	return &informerHandle{c: c, inf: inf}, nil
}

// RemoveInformer implements cache.Informers.
func (c *watchCache) RemoveInformer(_ context.Context, obj client.Object) error {
	k, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.informers, k)
	return nil
}

// Start implements cache.Informers: there is nothing to start.
func (c *watchCache) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// WaitForCacheSync implements cache.Informers. Each informer is synced
// once it exists, but the cache as a whole never reports itself synced: it
// blocks until ctx ends and returns false. What waits for it in a class
// (the inventory sweep and the owned objects' sweep a manager runs at
// start, beside the controller) therefore never runs on its own goroutine
// in the harness, where it would call the handler's hooks concurrently
// with the test's reconciles; a test drives a sweep with
// Harness.SweepInventory.
func (c *watchCache) WaitForCacheSync(ctx context.Context) bool {
	<-ctx.Done()
	return false
}

// IndexField implements client.FieldIndexer.
func (c *watchCache) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	k, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.indexes[k.gvk] == nil {
		c.indexes[k.gvk] = map[string]client.IndexerFunc{}
	}
	c.indexes[k.gvk][field] = extract
	return nil
}

// watchInformer is one kind's store and event handlers.
type watchInformer struct {
	key      informerKey
	store    map[string]client.Object // guarded by watchCache.mu
	handlers []*registration          // guarded by watchCache.mu
}

// order puts namespaces first and slices last.
func (inf *watchInformer) order() string {
	switch inf.key.gvk.Kind {
	case "Namespace":
		return "0"
	case "ResourceSlice":
		return "9"
	}
	return "5" + inf.key.gvk.String()
}

type watchEvent struct{ old, new client.Object }

// deliver calls every handler with evs, in order (the caller holds
// watchCache.delivery).
func (inf *watchInformer) deliver(evs []watchEvent) {
	if len(evs) == 0 {
		return
	}
	for _, r := range inf.registered() {
		for _, e := range evs {
			switch {
			case e.old == nil:
				r.h.OnAdd(e.new, false)
			case e.new == nil:
				r.h.OnDelete(e.old)
			default:
				r.h.OnUpdate(e.old, e.new)
			}
		}
	}
}

func (inf *watchInformer) registered() []*registration {
	return append([]*registration(nil), inf.handlers...)
}

// registration is a handler on a watchInformer.
type registration struct {
	// The interface's other methods (newer client-go versions add some)
	// are those of this nil value: nothing the SDK calls.
	toolscache.ResourceEventHandlerRegistration
	h toolscache.ResourceEventHandler
}

// HasSynced implements toolscache.ResourceEventHandlerRegistration: the
// handler saw the store when it was added.
func (*registration) HasSynced() bool { return true }

// informerHandle is what GetInformer returns.
type informerHandle struct {
	// The interface's other methods (newer controller-runtime versions
	// add some) are those of this nil value: nothing the SDK calls.
	cache.Informer
	c   *watchCache
	inf *watchInformer
}

var _ cache.Informer = &informerHandle{}

// AddEventHandler replays the store to h as the initial list, then adds h.
func (i *informerHandle) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.c.delivery.Lock()
	defer i.c.delivery.Unlock()
	i.c.mu.Lock()
	var initial []client.Object
	for _, k := range sortedKeys(i.inf.store) {
		initial = append(initial, i.inf.store[k])
	}
	r := &registration{h: h}
	i.inf.handlers = append(i.inf.handlers, r)
	i.c.mu.Unlock()
	for _, o := range initial {
		h.OnAdd(o, true)
	}
	return r, nil
}

func (i *informerHandle) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

func (i *informerHandle) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

func (i *informerHandle) RemoveEventHandler(reg toolscache.ResourceEventHandlerRegistration) error {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	for n, r := range i.inf.handlers {
		if r == reg {
			i.inf.handlers = append(i.inf.handlers[:n], i.inf.handlers[n+1:]...)
			break
		}
	}
	return nil
}

func (*informerHandle) AddIndexers(toolscache.Indexers) error { return nil }
func (*informerHandle) HasSynced() bool                       { return true }
func (*informerHandle) IsStopped() bool                       { return false }
