package resourceslice

import (
	"context"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/classname"
	"github.com/sliceclass/sliceclass/internal/feed"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// cacheLagRetry is how long a budgeted slice waits when the cache has not
// yet seen the controller's own last write to it.
const cacheLagRetry = 100 * time.Millisecond

// classReconciler decides the ResourceSlices of one class with a Handler.
// AddToManager and ClassSet.Serve build it and the controller that runs it;
// the test kit's harness builds it with buildReconciler and completes it
// with setupWithManager on a builder of its own (internal/classhook).
//
// A reconciler is built once with every collaborator it works with
// (buildReconciler: its client alone; AddToManager and ClassSet: the
// manager's too); setupWithManager completes the one a user built with the
// manager's collaborators, once, before the manager starts, and that
// reconciler is the one the controller runs.
type classReconciler struct {
	*classState
	// client reads slices and writes their status (writeStatus).
	client     client.Client
	scope      scope
	handler    handler.Handler
	cfg        *config
	recorder   events.EventRecorder
	fieldOwner client.FieldOwner
	// calls calls the handler, one call per slice at a time.
	calls *handlerCalls
	// owned applies, prunes and removes a handler.Owner's objects; nil for
	// other handlers.
	owned *ownedObjects
	// feeds tell the budgets' ledgers what the cluster shows; none outside
	// a manager, where the reconciler tells them what it reads itself.
	feeds []*feed.Feed
	// namespaces reads namespaces' consumer labels from the manager's
	// informer store; nil outside a manager.
	namespaces *sliceview.Namespaces
}

var _ reconcile.Reconciler = &classReconciler{}

// buildReconciler returns a reconciler serving class with h, for the test
// kit's harness, which builds its own controller: it passes it to
// setupWithManager with its builder. c reads slices (and Tenants, unless WithoutTenantRule) and
// patches their status; with a manager, pass mgr.GetClient() so reads come
// from the cache. It takes decision options only: the controller options
// (WithMaxConcurrentReconciles, WithRetryBackoff, WithLogger, WithWatch,
// WithClassLease) configure a controller buildReconciler does not build, and
// do not compile here. It returns an error naming the class for a reserved or invalid
// class, a nil handler or client, or a bad option.
func buildReconciler(c client.Client, class string, h handler.Handler, opts ...DecisionOption) (*classReconciler, error) {
	if err := classname.Validate(class); err != nil {
		return nil, err
	}
	all := make([]Option, len(opts))
	for i, o := range opts {
		all[i] = o
	}
	cfg, err := newConfig(all)
	if err != nil {
		return nil, fmt.Errorf("class %q: invalid options: %w", class, err)
	}
	if err := checkParts(c, class, h); err != nil {
		return nil, err
	}
	st, err := newClassState(class, cfg)
	if err != nil {
		return nil, err
	}
	r, err := newReconciler(c, class, h, cfg, st, collaborators{})
	if err != nil {
		st.detach()
		return nil, err
	}
	return r, nil
}

// collaborators are what a reconciler works with besides its client and
// its options. The zero value is a reconciler on its client alone
// (buildReconciler); a manager gives the rest (see bindClass).
type collaborators struct {
	// views is the manager's status.class view; nil outside a manager.
	views *sliceview.Classes
	// recorder records events; nil takes withEventRecorder's, else none.
	recorder events.EventRecorder
	// ownedReader reads owned objects' metadata; nil reads through the
	// client.
	ownedReader client.Reader
	// feeds are the budgets' feeds, in WithBudget's order.
	feeds []*feed.Feed
	// namespaces is the manager's namespace store.
	namespaces *sliceview.Namespaces
}

// checkParts refuses a nil client or handler.
func checkParts(c client.Client, class string, h handler.Handler) error {
	if h == nil {
		return fmt.Errorf("class %q: nil handler", class)
	}
	if c == nil {
		return fmt.Errorf("class %q: nil client", class)
	}
	return nil
}

// newReconciler builds the reconciler, once, from its configuration, its
// state and its collaborators.
func newReconciler(c client.Client, class string, h handler.Handler, cfg *config, st *classState, with collaborators) (*classReconciler, error) {
	if err := checkParts(c, class, h); err != nil {
		return nil, err
	}
	rec := with.recorder
	switch {
	case rec != nil:
	case cfg.recorder != nil:
		rec = cfg.recorder
	default:
		rec = discardRecorder{}
	}
	ownedReader := with.ownedReader
	if ownedReader == nil {
		ownedReader = c
	}
	o, err := newOwnedObjects(h, c, ownedReader, class, cfg.ownedTypes)
	if err != nil {
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	r := &classReconciler{
		classState: st,
		client:     c,
		scope:      scope{class: class, selector: cfg.selector, status: with.views},
		handler:    h,
		cfg:        cfg,
		recorder:   rec,
		fieldOwner: client.FieldOwner(fieldManager(class)),
		owned:      o,
		feeds:      with.feeds,
		namespaces: with.namespaces,
	}
	r.calls = &handlerCalls{h: h, timeout: cfg.timeout, class: class, metrics: st.metrics, warn: r.warn}
	return r, nil
}

// complete gives r, built by buildReconciler on its client alone, what a
// manager gives (setupWithManager): from then on the manager's feeds count
// its budgets, and it reads namespaces, status.class and owned objects from
// the manager's caches. It is called once, before the controller starts.
func (r *classReconciler) complete(with collaborators) error {
	if r.scope.status != nil || r.namespaces != nil || len(r.feeds) > 0 {
		return fmt.Errorf("class %q: the class reconciler is already set up with a manager", r.scope.class)
	}
	o, err := newOwnedObjects(r.handler, r.client, with.ownedReader, r.scope.class, r.cfg.ownedTypes)
	if err != nil {
		return fmt.Errorf("class %q: %w", r.scope.class, err)
	}
	if with.recorder != nil {
		r.recorder = with.recorder
	}
	r.owned = o
	r.scope.status = with.views
	r.feeds = with.feeds
	r.namespaces = with.namespaces
	return nil
}

// fieldManager is the field manager of every status patch the controller for
// class makes: "sliceclass-<class>", so managedFields say which class
// controller decided a slice.
func fieldManager(class string) string { return "sliceclass-" + class }

// Reconcile decides one slice, in three steps: fetch and guards, decide
// (tenant rule or handler, then the budget), save. It returns an error only
// when the slice must be retried with backoff, or a terminal error when
// retrying cannot help (the handler broke its contract, the API server
// rejected the status as invalid).
func (r *classReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	// 1. Fetch and guards: a slice gone, being deleted or no longer ours
	// gives back what it held; one not yet authenticated waits; one whose
	// handler kept failing waits for a change.
	current, err := r.fetch(ctx, req)
	if err != nil {
		return ctrl.Result{}, r.errorf(req, "getting the slice: %w", err)
	}
	if current == nil || !r.scope.serves(current) {
		if err := r.leaveClass(ctx, req, current); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
		return ctrl.Result{}, nil
	}
	// The slice leaves the budgets' waiting lines unless the budgets saw
	// this reconcile's acceptance (admit), or it waits for the cache.
	inLine := false
	defer func() {
		if !inLine {
			r.leaveLine(req)
		}
	}()
	if r.cfg.authGate && !conditions.IsAuthenticated(current) {
		log.FromContext(ctx).V(1).Info("waiting for Liqo to accept the slice's authentication")
		return ctrl.Result{}, nil
	}
	consumer, err := r.consumerOf(ctx, current)
	if err != nil {
		return ctrl.Result{}, r.errorf(req, "%w", err)
	}
	ctx = withConsumer(ctx, consumer) // for Owned and Release too
	switch wait, err := r.ready(ctx, req, current, consumer); {
	case err != nil:
		return ctrl.Result{}, r.errorf(req, "%w", err)
	case wait:
		inLine = true
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	if r.releaser() != nil {
		if err := r.seedHolding(ctx); err != nil {
			inLine = true
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
	}
	if r.retries.skip(req.NamespacedName, current.ResourceVersion) {
		return ctrl.Result{}, nil
	}

	// 2. Decide: the tenant rule or the handler, validated; then the budget
	// admits the offer or turns it into a BudgetExhausted denial.
	d, err := r.decide(ctx, current)
	if err != nil {
		if isHandlerFailure(err) && r.retries.fail(req.NamespacedName, current.ResourceVersion) {
			r.metrics.gaveUp.WithLabelValues(r.scope.class).Inc()
			r.warn(current, reasonGaveUp, actionHandle, "class %q gave up after %d consecutive handler failures; the slice is tried again on its next change: %v",
				r.scope.class, r.cfg.maxRetries, err)
			return r.withResync(ctrl.Result{}), nil
		}
		return ctrl.Result{}, r.errorf(req, "%w", err)
	}
	r.retries.forget(req.NamespacedName)
	var t ticket
	if len(r.ledgers) > 0 && conditions.IsAccepted(d.desired) {
		inLine = true // admitted, or waiting in line for what it asks
		if d.handled {
			d.out = ownedCopy(d.desired)
		}
		if t, err = r.admit(req, current, d.desired, consumer); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
	}

	// 3. Save: only owned fields, only when they changed, one patch; then
	// the release hook if the slice left Accepted.
	settleTransitionTime(current, d.desired)
	switch {
	case r.cfg.dryRun:
		r.dryRun(ctx, current, d.desired)
		if err := r.syncOwned(ctx, d.desired, conditions.IsAccepted(d.desired)); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
		return r.withResync(d.result), nil
	case ownedEqual(current, d.desired):
		r.settle(t, written, ledger.NotApplied, nil) // the cluster already shows it
	default:
		outcome, o, err := r.write(ctx, current, d.desired)
		r.settle(t, outcome, o, d.desired)
		if err != nil || outcome == writeConflicted {
			// The decision did not go through: sent again if nothing
			// changes before the retry.
			r.remember(req, current, d, err)
			if err != nil {
				return ctrl.Result{}, r.errorf(req, "%w", err)
			}
			return ctrl.Result{RequeueAfter: r.conflicts.When(req)}, nil
		}
		if outcome == writeGone {
			inLine = true // leaveClass leaves the line
			if err := r.leaveClass(ctx, req, nil); err != nil {
				return ctrl.Result{}, r.errorf(req, "%w", err)
			}
			return ctrl.Result{}, nil
		}
	}
	if err := r.syncOwned(ctx, d.desired, conditions.IsAccepted(d.desired)); err != nil {
		return ctrl.Result{}, r.errorf(req, "%w", err)
	}
	if err := r.settleHolding(ctx, req.NamespacedName, conditions.IsAccepted(d.desired)); err != nil {
		return ctrl.Result{}, r.errorf(req, "%w", err)
	}
	r.conflicts.Forget(req)
	return r.withResync(d.result), nil
}

// fetch reads the slice from the cache; nil when it is gone.
func (r *classReconciler) fetch(ctx context.Context, req reconcile.Request) (*authv1beta1.ResourceSlice, error) {
	var rs authv1beta1.ResourceSlice
	if err := r.client.Get(ctx, req.NamespacedName, &rs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &rs, nil
}

func (r *classReconciler) withResync(res ctrl.Result) ctrl.Result {
	if d := r.cfg.resync; d > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > d) {
		res.RequeueAfter = d
	}
	return res
}

func (r *classReconciler) errorf(req reconcile.Request, format string, args ...any) error {
	return fmt.Errorf("ResourceSlice %s, class %q: %w", req.NamespacedName, r.scope.class, fmt.Errorf(format, args...))
}

// leaveClass gives back what a slice gone, or no longer the class's, held:
// what the reconciler remembers of it, its place in the budgets' waiting
// lines (and, with no feed, its count), the handler's owned objects and
// what the handler holds for it (Release).
func (r *classReconciler) leaveClass(ctx context.Context, req reconcile.Request, current *authv1beta1.ResourceSlice) error {
	r.conflicts.Forget(req)
	r.retries.forget(req.NamespacedName) // a slice gone or not ours keeps no failure count
	r.memos.forget(req.NamespacedName)
	r.overGrants.forget(req.NamespacedName)
	if err := r.leave(ctx, req, current); err != nil {
		return err
	}
	var uid types.UID
	if current != nil {
		uid = current.UID
	}
	if err := r.removeOwned(ctx, current, req.NamespacedName, uid); err != nil {
		return err
	}
	ctx, err := r.releaseContext(ctx, current)
	if err != nil {
		return err
	}
	return r.settleHolding(ctx, req.NamespacedName, false)
}
