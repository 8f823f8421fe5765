package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// informerSource feeds a controller from one of the manager's shared
// informers, as controller-runtime's Kind source does (it forwards
// isInInitialList, so the initial replay is low priority on the priority
// queue) and, unlike it, takes its event handler off the informer when the
// controller stops: a ClassSet that
// serves and stops classes in a loop leaves nothing behind, and never
// re-lists from the API server (the informer replays its store to a new
// handler). The handler leaves the informer when stop is called, which
// the class does once its controller has stopped, before its runnable
// returns; no goroutine waits for that meanwhile.
type informerSource struct {
	cache   cache.Cache
	obj     client.Object
	handler crhandler.EventHandler
	preds   []predicate.Predicate

	mu      sync.Mutex
	inf     cache.Informer
	reg     toolscache.ResourceEventHandlerRegistration
	stopped bool
	removed sync.Once
}

// Start implements source.Source.
func (s *informerSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	inf, err := s.cache.GetInformer(ctx, s.obj)
	if err != nil {
		return fmt.Errorf("informer for %T: %w", s.obj, err)
	}
	pass := func(check func(predicate.Predicate) bool) bool {
		for _, p := range s.preds {
			if !check(p) {
				return false
			}
		}
		return true
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, isInInitialList bool) {
			obj, ok := o.(client.Object)
			if !ok {
				return
			}
			e := event.CreateEvent{Object: obj, IsInInitialList: isInInitialList}
			if pass(func(p predicate.Predicate) bool { return p.Create(e) }) {
				s.handler.Create(ctx, e, q)
			}
		},
		UpdateFunc: func(o, n any) {
			oldObj, ok1 := o.(client.Object)
			newObj, ok2 := n.(client.Object)
			if !ok1 || !ok2 {
				return
			}
			e := event.UpdateEvent{ObjectOld: oldObj, ObjectNew: newObj}
			if pass(func(p predicate.Predicate) bool { return p.Update(e) }) {
				s.handler.Update(ctx, e, q)
			}
		},
		DeleteFunc: func(o any) {
			unknown := false
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o, unknown = t.Obj, true
			}
			obj, ok := o.(client.Object)
			if !ok {
				return
			}
			e := event.DeleteEvent{Object: obj, DeleteStateUnknown: unknown}
			if pass(func(p predicate.Predicate) bool { return p.Delete(e) }) {
				s.handler.Delete(ctx, e, q)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching %T: %w", s.obj, err)
	}
	s.mu.Lock()
	s.inf, s.reg = inf, reg
	stopped := s.stopped
	s.mu.Unlock()
	if stopped { // stopped before it started: stop's remove found nothing
		_ = inf.RemoveEventHandler(reg)
		return fmt.Errorf("watching %T: %w", s.obj, errStopped)
	}
	return nil
}

// stop takes the handler off the informer, once, and makes sure a Start
// after it adds none.
func (s *informerSource) stop() {
	s.mu.Lock()
	s.stopped = true
	inf, reg := s.inf, s.reg
	s.mu.Unlock()
	if reg != nil {
		s.removed.Do(func() { _ = inf.RemoveEventHandler(reg) })
	}
}

// WaitForSync implements source.SyncingSource: the handler has seen every
// object the informer held when it was added.
func (s *informerSource) WaitForSync(ctx context.Context) error {
	s.mu.Lock()
	reg := s.reg
	s.mu.Unlock()
	if reg == nil {
		return errors.New("source not started")
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return fmt.Errorf("waiting for %T events: %w", s.obj, ctx.Err())
	}
	return nil
}

func (s *informerSource) String() string { return fmt.Sprintf("informer of %T", s.obj) }
