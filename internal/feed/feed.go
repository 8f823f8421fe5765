package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// QuotaKind is Liqo's Quota, which the provider's webhook enforces for
// each Accepted slice (offloading.liqo.io/v1beta1).
var QuotaKind = schema.GroupKind{Group: offloadingv1beta1.SchemeGroupVersion.Group, Kind: "Quota"}

// Feed tells a budget's ledger what one manager's cluster shows: every
// ResourceSlice from the manager's shared informer and, when the API server
// serves Liqo's Quota CRD, every Quota owned by a slice. The ledger counts
// from that, not from the SDK's own writes, so a restart, a failover, a
// lost answer or another writer changes nothing it counts. It runs on the
// leader; reconcilers admit nothing before it has delivered the initial
// lists.
type Feed struct {
	l      *ledger.Ledger
	cache  cache.Cache
	mapper meta.RESTMapper
	// views give each slice its effective class where the API server
	// keeps status.class; nil where it does not.
	views *sliceview.Classes
	// namespaces gives each slice its consumer without a cache read.
	namespaces *sliceview.Namespaces
	// pods is the ShadowPod watch of the set of classes that made the
	// feed (see pods.go).
	pods *Pods

	// reader reads a slice from the API server, uncached, to settle a
	// write whose answer did not say whether it was applied; settles are
	// the slices to read, a queue made (under mu) when the feed starts and
	// shut down when it returns, so that a feed never started holds no
	// goroutine.
	reader  client.Reader
	settles workqueue.TypedRateLimitingInterface[settleItem]
	// evict deletes the pods the ledger names, when the budget was built
	// WithEvictionAfter (see evict.go); nil otherwise.
	evict *evictor
	// podsServed is set once the ShadowPods are watched (Start).
	podsServed bool
	// epoch is the ledger's when the feed was made: once synced, the feed
	// tells the ledger its books are counted (Ledger.Counted).
	epoch   uint64
	counted atomic.Bool

	// done is closed by stop: no class of the manager draws from the
	// budget any more; ended, when Start returns.
	done     chan struct{}
	ended    chan struct{}
	stopOnce sync.Once

	started chan struct{} // closed once the handlers are registered (or failed)
	mu      sync.Mutex
	synced  []toolscache.InformerSynced
	err     error
}

// settleItem is a slice to read: the version its unsettled writes were
// decided from.
type settleItem struct {
	key  types.NamespacedName
	base string
}

func newFeed(mgr manager.Manager, l *ledger.Ledger, views *sliceview.Classes, ns *sliceview.Namespaces, pods *Pods) *Feed {
	var evict *evictor
	if l.MayEvict() {
		// Its recorder is asked for when it starts, where ShadowPods are served.
		evict = &evictor{l: l, writer: mgr.GetClient(), recorder: func() events.EventRecorder { return mgr.GetEventRecorder(evictorName) }}
	}
	epoch := l.Epoch()
	l.Counting(epoch) // its cohort waits for this feed's lists too
	return &Feed{evict: evict,
		l: l, epoch: epoch, cache: mgr.GetCache(), mapper: mgr.GetRESTMapper(), views: views, namespaces: ns, pods: pods,
		reader:  mgr.GetAPIReader(),
		started: make(chan struct{}),
		done:    make(chan struct{}),
		ended:   make(chan struct{}),
	}
}

// stop ends the feed, started or not.
func (f *Feed) stop() { f.stopOnce.Do(func() { close(f.done) }) }

// The backoff of a settling read that failed (the API server unreachable,
// or no get permission on resourceslices): the watch may settle the write
// first.
const (
	settleRetryBase = 200 * time.Millisecond
	settleRetryMax  = 30 * time.Second
)

// SettleLater asks for one read of the slice key, whose write decided from
// base ended with outcome o (Unknown or Lost): if the server still shows
// base, the write was not applied, and the ledger forgets it (a Lost write
// only once the server can no longer be applying it).
//
// Only a feed that started admits anything; a settle asked of one that
// ended is dropped (its ledger forgets everything the feed told it).
func (f *Feed) SettleLater(key types.NamespacedName, base string, o ledger.Outcome) {
	f.mu.Lock()
	q := f.settles
	f.mu.Unlock()
	if q == nil {
		return
	}
	it := settleItem{key: key, base: base}
	if o == ledger.Lost {
		q.AddAfter(it, ledger.InFlightBound)
		return
	}
	q.Add(it)
}

// settleLoop reads the slices settleLater asked for until the queue shuts
// down.
func (f *Feed) settleLoop(ctx context.Context) {
	for {
		it, shutdown := f.settles.Get()
		if shutdown {
			return
		}
		f.settle(ctx, it)
		f.settles.Done(it)
	}
}

func (f *Feed) settle(ctx context.Context, it settleItem) {
	// A list by name needs only the list permission the controller already
	// has (a get would need one more verb); metadata is all it reads.
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind + "List"))
	readAt := time.Now()
	err := f.reader.List(ctx, list, client.InNamespace(it.key.Namespace), client.MatchingFields{"metadata.name": it.key.Name})
	if err == nil && len(list.Items) == 0 {
		err = apierrors.NewNotFound(schema.GroupResource{Group: authv1beta1.GroupVersion.Group, Resource: "resourceslices"}, it.key.Name)
	}
	var m *metav1.PartialObjectMetadata
	if err == nil {
		m = &list.Items[0]
	}
	switch {
	case apierrors.IsNotFound(err):
		f.settles.Forget(it) // the watch brings the deletion, which ends all it held
	case err != nil:
		if ctx.Err() == nil {
			log.FromContext(ctx).V(1).Info("cannot read a slice to settle a lost answer; retrying (the watch may settle it first)",
				"budget", f.l.Name(), "ResourceSlice", it.key.String(), "error", err.Error())
			f.settles.AddRateLimited(it)
		}
	case m.ResourceVersion == it.base:
		f.settles.Forget(it)
		if again := f.l.SettleRead(it.key, it.base, readAt); again > 0 {
			f.settles.AddAfter(it, again)
		}
	default:
		// Changed since: the watch brings that version, which settles
		// every write decided from an older one.
		f.settles.Forget(it)
	}
}

// Start runs the feed (its budget's feed runner calls it on the leader) until
// ctx ends or stop is called. Before it returns, its event handlers have
// left the informers and the goroutines it started (the evictor among
// them) have returned.
func (f *Feed) Start(ctx context.Context) error {
	defer close(f.ended)
	settles := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[settleItem](settleRetryBase, settleRetryMax),
		workqueue.TypedRateLimitingQueueConfig[settleItem]{Name: ""})
	f.mu.Lock()
	f.settles = settles
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var undo []func()
	defer func() {
		cancel()
		wg.Wait()
		for _, u := range undo {
			u()
		}
	}()
	// The feed ends with ctx or stop; the settle loop with the queue.
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-f.done:
			cancel()
		case <-ctx.Done():
		}
		settles.ShutDown()
	}()
	undo, err := f.register(ctx)
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
	close(f.started)
	if err != nil {
		select {
		case <-f.done:
			return nil // stopped while it started: not the manager's failure
		default:
		}
		return fmt.Errorf("budget %q: %w", f.l.Name(), err)
	}
	// The books are counted once the initial lists are in, whether or not
	// a decision asks first: the budget's status shows no figures until
	// then.
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = f.WaitForSync(ctx) // an error: the feed stopped, and counts nothing
	}()
	if f.evict != nil && f.podsServed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.evict.run(ctx)
		}()
	}
	f.settleLoop(ctx)
	return nil
}

// register adds the feed's event handlers to the informers of what it
// counts, and returns how to take each one off again (also those added
// before an error). Each handler reads with ctx.
func (f *Feed) register(ctx context.Context) (undo []func(), err error) {
	remove := func(inf cache.Informer, reg toolscache.ResourceEventHandlerRegistration) {
		undo = append(undo, func() { _ = inf.RemoveEventHandler(reg) })
	}
	// Each slice's consumer is its namespace's label: the namespaces come
	// first.
	namespaces, err := f.cache.GetInformer(ctx, sliceview.NamespaceMetadata())
	if err != nil {
		return undo, fmt.Errorf("watching namespaces: %w", err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), namespaces.HasSynced) {
		return undo, fmt.Errorf("waiting for namespaces: %w", ctx.Err())
	}
	// Each observation carries the slice's class from the event itself:
	// where the API server keeps status.class, which the pinned types
	// drop, the slices are observed through the status.class views;
	// elsewhere spec.class is the class, and the typed informer says it.
	var slices cache.Informer
	if views := f.views; views != nil && views.Detect(ctx) {
		slices, err = views.Cache().GetInformer(ctx, &sliceview.View{})
	} else {
		slices, err = f.cache.GetInformer(ctx, &authv1beta1.ResourceSlice{})
	}
	if err != nil {
		return undo, fmt.Errorf("watching ResourceSlices: %w", err)
	}
	reg, err := slices.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.slice(ctx, o) },
		UpdateFunc: func(_, o any) { f.slice(ctx, o) },
		DeleteFunc: f.sliceGone,
	})
	if err != nil {
		return undo, fmt.Errorf("watching ResourceSlices: %w", err)
	}
	remove(slices, reg)
	synced := []toolscache.InformerSynced{reg.HasSynced}
	if ok, err := served(f.mapper, QuotaKind); err != nil {
		return undo, err
	} else if ok {
		quotas, err := f.cache.GetInformer(ctx, &offloadingv1beta1.Quota{})
		if err != nil {
			return undo, fmt.Errorf("watching Liqo's Quotas: %w", err)
		}
		qreg, err := quotas.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { f.quota(o, false) },
			UpdateFunc: func(_, o any) { f.quota(o, false) },
			DeleteFunc: func(o any) { f.quota(o, true) },
		})
		if err != nil {
			return undo, fmt.Errorf("watching Liqo's Quotas: %w", err)
		}
		remove(quotas, qreg)
		synced = append(synced, qreg.HasSynced)
	} else {
		log.FromContext(ctx).V(1).Info("Liqo's Quota CRD is not served: budget counts Accepted slices only", "budget", f.l.Name())
	}
	if ok, err := served(f.mapper, shadowPodKind); err != nil {
		return undo, err
	} else if ok && f.pods != nil {
		f.podsServed = true
		// The ledger keeps only the pods of its own slices' users, and
		// reads a user's from the set's watch when a Quota names it: the
		// budgets of a set share one copy of each pod, and one handler.
		podsSynced, detach, err := f.pods.attach(ctx, f.l)
		if err != nil {
			return undo, fmt.Errorf("watching Liqo's ShadowPods: %w", err)
		}
		undo = append(undo, detach)
		synced = append(synced, podsSynced)
	}
	f.mu.Lock()
	f.synced = synced
	f.mu.Unlock()
	return undo, nil
}

// served asks discovery (through the manager's REST mapper) whether the
// API server serves Liqo's kind, in offloading/v1beta1.
func served(mapper meta.RESTMapper, kind schema.GroupKind) (bool, error) {
	_, err := mapper.RESTMapping(kind, offloadingv1beta1.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("discovering Liqo's %s CRD: %w", kind.Kind, err)
	}
}

// WaitForSync blocks until the feed has delivered the initial lists.
// It returns an error, rather than wait for good, once ctx ends or the
// feed stops (its manager stopping, or no class of it drawing from the
// budget any more): a decision in flight (a ClassSet's, whose context
// Stop does not end) must not wait for a feed that is gone.
func (f *Feed) WaitForSync(ctx context.Context) error {
	select {
	case <-f.started:
	case <-ctx.Done():
		return fmt.Errorf("budget %q: waiting for its feed to start: %w", f.l.Name(), ctx.Err())
	case <-f.done:
		return fmt.Errorf("budget %q: %w", f.l.Name(), errFeedStopped)
	case <-f.ended:
		return fmt.Errorf("budget %q: %w", f.l.Name(), errFeedStopped)
	}
	select {
	case <-f.done: // stopped, and started too: select picks either
		return fmt.Errorf("budget %q: %w", f.l.Name(), errFeedStopped)
	default:
	}
	f.mu.Lock()
	synced, err := f.synced, f.err
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("budget %q: %w", f.l.Name(), err)
	}
	for _, s := range synced {
		if s() {
			continue
		}
		stop := make(chan struct{})
		quit := make(chan struct{})
		go func() {
			defer close(stop)
			select {
			case <-ctx.Done():
			case <-f.done:
			case <-f.ended:
			case <-quit:
			}
		}()
		ok := toolscache.WaitForCacheSync(stop, s)
		close(quit)
		if !ok {
			return fmt.Errorf("budget %q: waiting for the slices, Quotas and pods it counts: %w", f.l.Name(),
				errors.Join(ctx.Err(), errFeedStopped))
		}
	}
	// The initial lists are in the books: told once (a feed stopped since
	// tells nothing: its ledger has moved to a later epoch).
	if !f.counted.Load() {
		f.l.Counted(f.epoch)
		f.counted.Store(true)
	}
	return nil
}

// errFeedStopped: the budget's feed stopped before it synced.
var errFeedStopped = errors.New("its feed stopped before it synced")

// slice observes a slice the informer delivered; ctx is the feed's.
func (f *Feed) slice(ctx context.Context, o any) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	// The namespaces' informer synced before this handler was added: the
	// read does not block. A failed read (none expected from a synced
	// cache) counts the slice as its namespace's, unless the feed is
	// stopping (its handler is about to leave the informer).
	c, ok := f.namespaces.Consumer(ctx, obj.GetNamespace())
	if !ok {
		var err error
		if c, err = sliceview.ReadConsumer(ctx, f.cache, obj.GetNamespace()); err != nil && ctx.Err() != nil {
			return
		}
	}
	switch s := obj.(type) {
	case *sliceview.View:
		f.l.ObserveSlice(viewObservation(s, c.ID))
	case *authv1beta1.ResourceSlice:
		f.l.ObserveSlice(Observation(s, sliceview.EffectiveClass(s, nil), c.ID))
	}
}

func (f *Feed) sliceGone(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if obj, ok := o.(client.Object); ok {
		f.l.ForgetSlice(client.ObjectKeyFromObject(obj), obj.GetUID())
	}
}

// viewObservation is what the ledger reads of a slice's view, whose
// trusted consumer is consumer.
func viewObservation(v *sliceview.View, consumer string) ledger.Slice {
	o := ledger.Slice{
		Key:      client.ObjectKeyFromObject(v),
		UID:      v.UID,
		RV:       v.ResourceVersion,
		Class:    v.EffectiveClass(),
		Consumer: consumer,
		Labels:   v.Labels,
		Accepted: v.Accepted(),
		Created:  v.CreationTimestamp.Time,
		// A shrink's mark: the victim grows back only into free capacity.
		Reclaimed: v.Reclaimed(),
	}
	if o.Accepted {
		o.Grant = v.Status.Resources.List()
	}
	return o
}

func (f *Feed) quota(o any, gone bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, gone = t.Obj, true
	}
	q, ok := o.(*offloadingv1beta1.Quota)
	if !ok {
		return
	}
	owner := metav1.GetControllerOf(q)
	if owner == nil || owner.Kind != authv1beta1.ResourceSliceKind || !isAuthGroup(owner.APIVersion) {
		return
	}
	key := types.NamespacedName{Namespace: q.Namespace, Name: owner.Name}
	if gone {
		f.l.ForgetQuota(key, q.Name)
		return
	}
	f.l.ObserveQuota(key, owner.UID, q.Name, q.Spec.User, q.Spec.Resources)
}

func isAuthGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == authv1beta1.GroupVersion.Group
}

// Observation is what the ledger reads of rs, whose effective class is
// class and trusted consumer is consumer.
func Observation(rs *authv1beta1.ResourceSlice, class, consumer string) ledger.Slice {
	o := ledger.Slice{
		Key:      client.ObjectKeyFromObject(rs),
		UID:      rs.UID,
		RV:       rs.ResourceVersion,
		Class:    class,
		Consumer: consumer,
		Labels:   rs.Labels,
		Accepted: conditions.IsAccepted(rs),
		Created:  rs.CreationTimestamp.Time,
	}
	if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); o.Accepted && c != nil && c.Reason == ledger.ReasonReclaimed {
		o.Reclaimed = true // a shrink's mark: the victim grows back only into free capacity
	}
	if o.Accepted {
		o.Grant = rs.Status.Resources
	}
	return o
}
