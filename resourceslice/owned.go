package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/owned"
)

// Objects owned per accepted slice (handler.Owner). The SDK applies what
// Owned returns after each reconcile that leaves the slice Accepted by the
// class, removes it all when the slice is Denied, leaves the class or is
// gone, sweeps by label what no reconcile reaches, and watches the declared
// types to restore what someone deleted or changed. See handler.Owner.

// Event reasons of owned objects.
const (
	reasonOwnedApplyFailed  = "OwnedApplyFailed"
	reasonOwnedDeleteFailed = "OwnedDeleteFailed"
	actionOwn               = "Own"
)

// WithOwnedTypes (a decision option) declares the types of the objects the
// class's handler.Owner returns, by a zero object of each (e.g.
// &corev1.ConfigMap{}, &schedulingv1.PriorityClass{}), as
// controller-runtime's builder.Owns does. The controller watches their
// metadata, filtered by the class label, so an owned object deleted or
// changed by hand is applied again; the sweep lists them to delete what
// slices gone while the controller was down left behind. Owned may return
// only objects of declared types; others are refused with an event. The
// manager's cache must be able to list and watch them (RBAC: get, list,
// watch, create, patch, delete). A handler.Owner needs it: registering one
// without it (AddToManager, ClassSet.Serve, buildReconciler) fails, and so
// does giving it for a handler that is not an Owner.
func WithOwnedTypes(objs ...client.Object) DecisionOption {
	return func(c *config) {
		for _, o := range objs {
			if o == nil {
				c.errs = append(c.errs, errors.New("nil owned type"))
				return
			}
		}
		c.ownedTypes = append(c.ownedTypes, objs...)
	}
}

// ownedObjects is the class's owned-object machinery; nil unless the
// handler is a handler.Owner.
type ownedObjects struct {
	owner   handler.Owner
	applier *owned.Applier
	// kinds are the declared types.
	kinds map[schema.GroupVersionKind]bool
	// metas are zero metadata objects of the declared types, to watch.
	metas []*metav1.PartialObjectMetadata
}

// newOwnedObjects builds the machinery for h with c writing and reader
// reading (metadata-only). It refuses a handler.Owner without declared
// types: everything its Owned returns would be refused at run time, on every
// slice, and nothing would watch or sweep its objects.
func newOwnedObjects(h handler.Handler, c client.Client, reader client.Reader, class string, types []client.Object) (*ownedObjects, error) {
	owner, ok := h.(handler.Owner)
	switch {
	case !ok && len(types) > 0:
		return nil, errors.New("WithOwnedTypes given, but the handler is not a handler.Owner")
	case !ok:
		return nil, nil
	case len(types) == 0:
		return nil, fmt.Errorf("the handler (%T) is a handler.Owner, but no owned type is declared: add the option WithOwnedTypes naming the types its Owned returns (e.g. WithOwnedTypes(&corev1.ConfigMap{}))", h)
	}
	o := &ownedObjects{owner: owner, kinds: map[schema.GroupVersionKind]bool{}}
	for _, t := range types {
		gvk, err := apiutil.GVKForObject(t, c.Scheme())
		if err != nil {
			return nil, fmt.Errorf("owned type %T: %w", t, err)
		}
		if !o.kinds[gvk] {
			o.kinds[gvk] = true
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvk)
			o.metas = append(o.metas, m)
		}
	}
	a, err := owned.New(c, reader, c.Scheme(), class, owned.WithTypes(types...))
	if err != nil {
		return nil, err
	}
	o.applier = a
	return o, nil
}

// declared checks that every object is of a declared type.
func (o *ownedObjects) declared(objs []client.Object, c client.Client) error {
	for _, obj := range objs {
		if obj == nil {
			continue // the applier refuses it, naming it
		}
		gvk, err := apiutil.GVKForObject(obj, c.Scheme())
		if err != nil {
			return fmt.Errorf("%w: owned object %T: %w", owned.ErrInvalid, obj, err)
		}
		if !o.kinds[gvk] {
			return fmt.Errorf("%w: owned object %s %s/%s is of a type not declared with WithOwnedTypes", owned.ErrInvalid, gvk.Kind, obj.GetNamespace(), obj.GetName())
		}
	}
	return nil
}

// syncOwned makes the slice's owned objects follow its decision as now
// written: the handler's set applied (and what it no longer holds pruned)
// when it is Accepted by the class, everything removed when not. A failure
// is a Warning event and an error (retried with backoff); the decision
// stands.
func (r *classReconciler) syncOwned(ctx context.Context, rs *authv1beta1.ResourceSlice, accepted bool) error {
	o := r.owned
	if o == nil {
		return nil
	}
	key := client.ObjectKeyFromObject(rs)
	if !accepted {
		return r.removeOwned(ctx, rs, key, rs.UID)
	}
	objs, err := o.owner.Owned(ctx, rs.DeepCopy())
	if err == nil {
		err = o.declared(objs, r.client)
	}
	if err != nil {
		r.warn(rs, reasonOwnedApplyFailed, actionOwn, "class %q: the handler's owned objects: %v; nothing applied or pruned", r.scope.class, err)
		return fmt.Errorf("owned objects: %w", err)
	}
	if r.cfg.dryRun {
		rep, err := o.applier.Plan(ctx, rs, objs)
		if err != nil {
			return fmt.Errorf("planning owned objects: %w", err)
		}
		if len(rep.Pruned) > 0 {
			r.recorder.Eventf(rs, nil, corev1.EventTypeNormal, "OwnedPlan", actionDryRun, "%s",
				truncate(fmt.Sprintf("dry run: class %q would apply %s and prune %s", r.scope.class, refs(rep.Applied), refs(rep.Pruned))))
		}
		log.FromContext(ctx).V(1).Info("dry run: owned objects", "apply", refs(rep.Applied), "prune", refs(rep.Pruned))
		return nil
	}
	rep, err := o.applier.Apply(ctx, rs, objs)
	if err != nil {
		r.warn(rs, reasonOwnedApplyFailed, actionOwn, "class %q: applying owned objects (nothing pruned): %v", r.scope.class, err)
		return fmt.Errorf("applying owned objects: %w", err)
	}
	if len(rep.Pruned) > 0 {
		log.FromContext(ctx).Info("pruned owned objects", "objects", refs(rep.Pruned))
	}
	return nil
}

// removeOwned deletes every object owned by the slice key (by uid, or by
// its namespace and name when uid is ""); rs, when not nil, gets the
// Warning event of a failure.
func (r *classReconciler) removeOwned(ctx context.Context, rs *authv1beta1.ResourceSlice, key types.NamespacedName, uid types.UID) error {
	if r.owned == nil || r.cfg.dryRun {
		return nil
	}
	rep, err := r.owned.applier.Remove(ctx, key, uid)
	if err != nil {
		if rs != nil {
			r.warn(rs, reasonOwnedDeleteFailed, actionOwn, "class %q: deleting owned objects: %v", r.scope.class, err)
		}
		return fmt.Errorf("deleting owned objects: %w", err)
	}
	if len(rep.Deleted) > 0 {
		log.FromContext(ctx).Info("deleted owned objects", "objects", refs(rep.Deleted))
	}
	return nil
}

func refs(rs []owned.Ref) string {
	if len(rs) == 0 {
		return "nothing"
	}
	out := make([]string, len(rs))
	for i, x := range rs {
		out[i] = x.String()
	}
	return strings.Join(out, ", ")
}

// sweepOwnedLoop deletes, once the caches have synced and then at the
// resync period, every object of the class whose slice no longer exists in
// the class (or is Denied): cluster-scoped objects and objects in other
// namespaces, which no ownerReference reaches, and what slices gone while
// the controller was down left behind.
func (r *classReconciler) sweepOwnedLoop(ctx context.Context, synced func(context.Context) bool) {
	if r.owned == nil || r.cfg.dryRun || !synced(ctx) {
		return
	}
	for {
		if err := r.sweepOwned(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "owned-object sweep failed; retrying at the next period")
		}
		period := r.cfg.resync
		if period <= 0 {
			period = defaultOwnedSweep
		}
		t := time.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// defaultOwnedSweep is the sweep period without WithResyncPeriod.
const defaultOwnedSweep = 10 * time.Minute

func (r *classReconciler) sweepOwned(ctx context.Context) error {
	var list authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing slices for the owned-object sweep: %w", err)
	}
	live := map[types.UID]bool{}
	for i := range list.Items {
		rs := &list.Items[i]
		if r.scope.selects(rs) && !conditions.IsDenied(rs) {
			live[rs.UID] = true
		}
	}
	rep, err := r.owned.applier.Sweep(ctx, func(uid types.UID) bool { return live[uid] })
	if len(rep.Deleted) > 0 {
		log.FromContext(ctx).Info("swept owned objects of slices gone", "objects", refs(rep.Deleted))
	}
	return err
}

// ownedSources watch the declared owned types' metadata, filtered by the
// class label, and enqueue the owning slice: an owned object deleted or
// changed by hand is applied again.
func (cc *classController) ownedSources() []*informerSource {
	o := cc.r.owned
	if o == nil {
		return nil
	}
	ours := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetLabels()[owned.LabelClass] == cc.r.scope.class
	})
	out := make([]*informerSource, 0, len(o.metas))
	for _, m := range o.metas {
		out = append(out, &informerSource{cache: cc.mgr.GetCache(), obj: m.DeepCopy(), handler: cc.r.ownerHandler(), preds: []predicate.Predicate{ours}})
	}
	return out
}

// ownerHandler enqueues the slice an owned object names in its labels.
func (r *classReconciler) ownerHandler() crhandler.EventHandler {
	type q = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(ctx context.Context, obj client.Object, queue q) {
		if key, ok := r.ownerOf(ctx, obj); ok {
			queue.Add(reconcile.Request{NamespacedName: key})
		}
	}
	// Creations are the SDK's own applies (or the initial list): only a
	// change or a deletion by someone else needs the set applied again. An
	// apply that changes nothing causes no event.
	return crhandler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, queue q) { enqueue(ctx, e.ObjectNew, queue) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, queue q) { enqueue(ctx, e.Object, queue) },
	}
}

// ownerOf finds the slice an owned object's labels name: by namespace and
// name, checked against the UID label, or (a name too long for a label,
// stored shortened) by UID among the namespace's slices.
func (r *classReconciler) ownerOf(ctx context.Context, obj client.Object) (types.NamespacedName, bool) {
	l := obj.GetLabels()
	ns, name, uid := l[owned.LabelSliceNamespace], l[owned.LabelSliceName], types.UID(l[owned.LabelSliceUID])
	if ns == "" || uid == "" {
		return types.NamespacedName{}, false
	}
	var rs authv1beta1.ResourceSlice
	if name != "" && r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rs) == nil && rs.UID == uid {
		return client.ObjectKeyFromObject(&rs), true
	}
	var list authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return types.NamespacedName{}, false
	}
	for i := range list.Items {
		if list.Items[i].UID == uid {
			return client.ObjectKeyFromObject(&list.Items[i]), true
		}
	}
	return types.NamespacedName{}, false
}
