package resourceslice

import (
	"context"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// The effective class: the rule that says whether a class controller
// serves a slice (scope: classOf, selects, serves), and the source that
// enqueues a slice whose status.class names (or named) the class. What
// status.class is, on the pinned types that drop it, is read from the
// manager's class views (internal/sliceview).
// source enqueues, for the class of sc, every slice whose status.class or
// spec.class is (or was) the class: a slice whose status.class comes to
// name another class leaves it, one whose status.class names the class
// joins it. It starts watching only if the server's schema has
// status.class.
func viewSource(s *sliceview.Classes, sc scope) *gatedSource {
	ours := func(o client.Object) bool {
		v, ok := o.(*sliceview.View)
		return ok && (v.Spec.Class == sc.class || v.Status.Class == sc.class) && sc.selector.Matches(labels.Set(v.Labels))
	}
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
	}
	views := &informerSource{cache: s.Cache(), obj: &sliceview.View{}, handler: crhandler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if v, ok := e.Object.(*sliceview.View); ok && v.Status.Class != "" && ours(v) {
				enqueue(q, v)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*sliceview.View)
			n, ok2 := e.ObjectNew.(*sliceview.View)
			if ok1 && ok2 && o.Status.Class != n.Status.Class && (ours(o) || ours(n)) {
				enqueue(q, n)
			}
		},
		// A deletion carries the slice's last status.class: the typed
		// slice's delete event cannot say the slice was ours (the pinned
		// types drop status.class, and this cache may drop the view
		// first), so the class learns of the deletion here.
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if v, ok := e.Object.(*sliceview.View); ok && v.Status.Class != "" && ours(v) {
				enqueue(q, v)
			}
		},
	}}
	return &gatedSource{s: s, inner: views}
}

// gatedSource starts inner only when the server supports status.class.
type gatedSource struct {
	s       *sliceview.Classes
	inner   *informerSource
	started bool
}

func (g *gatedSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	if !g.s.Detect(ctx) {
		return nil
	}
	g.started = true
	return g.inner.Start(ctx, q)
}

func (g *gatedSource) WaitForSync(ctx context.Context) error {
	if !g.started {
		return nil
	}
	return g.inner.WaitForSync(ctx)
}

func (g *gatedSource) String() string { return "status.class of ResourceSlices" }

// scope is the one rule that says whether a class controller serves a
// slice. The slice predicate, the Tenant mapping, Reconcile and the budget's
// rebuild all ask it, so they can never disagree.
type scope struct {
	class    string
	selector labels.Selector
	// status reads status.class, which the pinned Liqo types drop; nil
	// outside a manager (buildReconciler), where classOf alone decides.
	status *sliceview.Classes
}

// classOf is the slice's effective class, as Liqo's
// ResourceSlice.EffectiveClass() defines it: status.class when set, else
// spec.class. The pinned types drop status.class, so it is read from the
// manager's status.class view (none outside a manager, where the typed
// object alone decides).
func (s scope) classOf(rs *authv1beta1.ResourceSlice) string {
	return sliceview.EffectiveClass(rs, s.status)
}

// selects reports whether rs is of the class (its effective class) and
// matches the selector, whatever its lifecycle.
func (s scope) selects(rs *authv1beta1.ResourceSlice) bool {
	return rs != nil && s.classOf(rs) == s.class && s.selector.Matches(labels.Set(rs.GetLabels()))
}

// serves reports whether the controller decides rs now: selected and not
// being deleted.
func (s scope) serves(rs *authv1beta1.ResourceSlice) bool {
	return s.selects(rs) && rs.DeletionTimestamp.IsZero()
}
