package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
)

// Reconciler decides the ResourceSlices of one class with a Handler. Build it
// with NewReconciler when wiring your own controller; AddToManager is the
// one-line path that builds and registers it.
type Reconciler struct {
	client   client.Client
	class    string
	handler  handler.Handler
	cfg      *config
	recorder events.EventRecorder
	metrics  *metrics
	// conflicts spaces out quiet retries after a write conflict.
	conflicts workqueue.TypedRateLimiter[reconcile.Request]
	// consumerIndex names the cache field index of this class's slices by
	// consumer ID, when AddToManager registered one.
	consumerIndex string
}

var _ reconcile.Reconciler = &Reconciler{}

// NewReconciler returns a Reconciler serving class with h. c reads slices
// (and Tenants, unless WithoutTenantRule) and patches their status; with a
// manager, pass mgr.GetClient() so reads come from the cache. It returns an
// error naming the class for a reserved or invalid class, a nil handler or
// client, or a bad option.
func NewReconciler(c client.Client, class string, h handler.Handler, opts ...Option) (*Reconciler, error) {
	if err := ValidateClass(class); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("class %q: nil handler", class)
	}
	if c == nil {
		return nil, fmt.Errorf("class %q: nil client", class)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("class %q: invalid options: %w", class, err)
	}
	m, err := newMetrics(cfg.registerer)
	if err != nil {
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	var rec events.EventRecorder = discardRecorder{}
	if cfg.recorder != nil {
		rec = cfg.recorder
	}
	return &Reconciler{
		client:    c,
		class:     class,
		handler:   h,
		cfg:       cfg,
		recorder:  rec,
		metrics:   m,
		conflicts: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](cfg.backoffBase, cfg.backoffMax),
	}, nil
}

// Class returns the class the Reconciler serves.
func (r *Reconciler) Class() string { return r.class }

// Reconcile decides one slice. See the package documentation for the steps.
// It returns an error only when the slice must be retried with backoff, or a
// terminal error when retrying cannot help (the handler broke its contract,
// the API server rejected the status as invalid).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("class", r.class, "resourceSlice", req.NamespacedName)
	ctx = log.IntoContext(ctx, logger)

	var current authv1beta1.ResourceSlice
	if err := r.client.Get(ctx, req.NamespacedName, &current); err != nil {
		if apierrors.IsNotFound(err) {
			r.conflicts.Forget(req)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting ResourceSlice %s for class %q: %w", req.NamespacedName, r.class, err)
	}
	if got := ClassOf(&current); got != r.class {
		logger.V(1).Info("slice is not of this class, leaving it alone", "sliceClass", got)
		return ctrl.Result{}, nil
	}
	if !current.DeletionTimestamp.IsZero() {
		logger.V(1).Info("slice is being deleted, not deciding")
		return ctrl.Result{}, nil
	}
	if r.cfg.authGate && !conditions.IsAuthenticated(&current) {
		logger.V(1).Info("waiting for Liqo to accept the slice's authentication")
		return ctrl.Result{}, nil
	}

	desired := current.DeepCopy()
	var result ctrl.Result
	callHandler := true
	if r.cfg.tenantRule {
		tc, err := r.tenantCondition(ctx, &current)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("ResourceSlice %s, class %q: %w", req.NamespacedName, r.class, err)
		}
		switch tc {
		case authv1beta1.TenantConditionDrained:
			conditions.Deny(desired, ReasonTenantDrained, "the consumer's Tenant is drained")
			callHandler = false
		case authv1beta1.TenantConditionCordoned:
			if !conditions.IsDecided(&current) {
				conditions.Deny(desired, ReasonTenantCordoned, "the consumer's Tenant is cordoned: no new resources")
			}
			callHandler = false
		}
	}

	if callHandler {
		out := current.DeepCopy()
		res, err := r.handle(ctx, &current, out)
		if err != nil {
			return res, fmt.Errorf("ResourceSlice %s, class %q: %w", req.NamespacedName, r.class, err)
		}
		if err := validate(out); err != nil {
			r.metrics.errors.WithLabelValues(r.class, errKindContract).Inc()
			reason := ReasonNoDecision
			if errors.Is(err, errNegative) {
				reason = ReasonInvalidResources
			}
			r.warn(&current, reason, actionValidate, "class %q handler broke its contract: %v", r.class, err)
			return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("ResourceSlice %s, class %q: handler broke its contract: %w", req.NamespacedName, r.class, err))
		}
		if changed := foreignChanges(&current, out); len(changed) > 0 {
			r.warn(&current, ReasonChangesDiscarded, actionValidate,
				"class %q handler changed fields a class controller does not own; discarded: %s", r.class, strings.Join(changed, ", "))
		}
		copyOwned(desired, out)
		result = res
	}
	settleTransitionTime(&current, desired)

	if !ownedEqual(&current, desired) {
		res, done, err := r.write(ctx, req, &current, desired)
		if done {
			return res, err
		}
	}
	r.conflicts.Forget(req)

	if d := r.cfg.resync; d > 0 && (result.RequeueAfter == 0 || result.RequeueAfter > d) {
		result.RequeueAfter = d
	}
	return result, nil
}

// write patches desired's owned fields with one optimistic-lock merge patch
// against current and records the decision transition. done reports that
// Reconcile must return res and err as they are.
func (r *Reconciler) write(ctx context.Context, req reconcile.Request, current, desired *authv1beta1.ResourceSlice) (res ctrl.Result, done bool, err error) {
	logger := log.FromContext(ctx)
	before := conditions.Get(current, conditions.Resources).DeepCopy()
	// The patch is computed from current to desired: a JSON merge patch of the
	// owned fields that changed, plus metadata.resourceVersion. Fields the
	// Go types do not know are never in it.
	err = r.client.Status().Patch(ctx, desired, ownedPatch{from: current})
	switch {
	case err == nil:
	case apierrors.IsConflict(err):
		delay := r.conflicts.When(req)
		logger.V(1).Info("status write conflicted with another writer, retrying", "after", delay)
		return ctrl.Result{RequeueAfter: delay}, true, nil
	case apierrors.IsNotFound(err):
		r.conflicts.Forget(req)
		return ctrl.Result{}, true, nil
	case apierrors.IsInvalid(err):
		r.warn(current, ReasonStatusRejected, actionWrite, "API server rejected the status of class %q: %v", r.class, err)
		return ctrl.Result{}, true, reconcile.TerminalError(fmt.Errorf("ResourceSlice %s, class %q: status rejected: %w", req.NamespacedName, r.class, err))
	default:
		return ctrl.Result{}, true, fmt.Errorf("patching status of ResourceSlice %s for class %q: %w", req.NamespacedName, r.class, err)
	}

	after := conditions.Get(desired, conditions.Resources)
	if after != nil && (before == nil || before.Status != after.Status) {
		outcome := outcomeAccepted
		if after.Status == conditions.Denied {
			outcome = outcomeDenied
		}
		r.metrics.decisions.WithLabelValues(r.class, outcome).Inc()
		r.decisionEvent(desired, after)
		logger.Info("decided", "decision", after.Status, "reason", after.Reason)
	}
	return ctrl.Result{}, false, nil
}

// handle calls the handler on rs (a copy of current), turning a panic into an error, and records
// the handler's duration and failures.
func (r *Reconciler) handle(ctx context.Context, current, rs *authv1beta1.ResourceSlice) (res ctrl.Result, err error) {
	start := time.Now()
	defer func() {
		r.metrics.duration.WithLabelValues(r.class).Observe(time.Since(start).Seconds())
		if p := recover(); p != nil {
			r.metrics.errors.WithLabelValues(r.class, errKindPanic).Inc()
			log.FromContext(ctx).V(1).Info("handler panicked", "panic", p, "stack", string(debug.Stack()))
			r.warn(current, ReasonHandlerPanicked, actionHandle, "class %q handler panicked: %v", r.class, p)
			res, err = ctrl.Result{}, fmt.Errorf("handler panicked: %v", p)
		}
	}()
	res, err = r.handler.Handle(ctx, rs)
	if err != nil {
		r.metrics.errors.WithLabelValues(r.class, errKindError).Inc()
		r.warn(current, ReasonHandlerFailed, actionHandle, "class %q handler failed: %v", r.class, err)
		return ctrl.Result{}, fmt.Errorf("handler: %w", err)
	}
	return res, nil
}

var errNegative = errors.New("negative quantity")

// validate checks the handler's output: exactly one Resources condition,
// Accepted or Denied, and no negative quantity in status.resources.
func validate(rs *authv1beta1.ResourceSlice) error {
	n := 0
	for _, c := range rs.Status.Conditions {
		if c.Type == conditions.Resources {
			n++
		}
	}
	switch c := conditions.Get(rs, conditions.Resources); {
	case n > 1:
		return fmt.Errorf("%d Resources conditions; set it with conditions.Accept or conditions.Deny", n)
	case c == nil:
		return errors.New("no decision: the Resources condition is not set; call conditions.Accept or conditions.Deny")
	case c.Status != conditions.Accepted && c.Status != conditions.Denied:
		return fmt.Errorf("no decision: Resources condition status %q is neither %q nor %q", c.Status, conditions.Accepted, conditions.Denied)
	}
	var negative []string
	for name, q := range rs.Status.Resources {
		if q.Sign() < 0 {
			negative = append(negative, fmt.Sprintf("%s=%s", name, q.String()))
		}
	}
	if len(negative) > 0 {
		sort.Strings(negative)
		return fmt.Errorf("%w in status.resources: %s", errNegative, strings.Join(negative, ", "))
	}
	return nil
}
