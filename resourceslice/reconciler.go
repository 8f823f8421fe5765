package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// cacheLagRetry is how long a budgeted slice waits when the cache has not
// yet seen the controller's own last write to it.
const cacheLagRetry = 100 * time.Millisecond

// Reconciler decides the ResourceSlices of one class with a Handler. Build it
// with NewReconciler when wiring your own controller; AddToManager is the
// one-line path that builds and registers it.
//
// A Reconciler is built once, with every collaborator it works with, and
// never changed afterwards; what it remembers between reconciles (its
// classState) may be shared by a second Reconciler of the same class, which
// SetupWithManager builds with the manager's collaborators.
type Reconciler struct {
	*classState
	client client.Client
	// status sends the status patches: through client, or, for a
	// controller the SDK built from a manager, a REST client that reads
	// only the answer's resourceVersion.
	status     statusWriter
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
	// a manager, where the Reconciler tells them what it reads itself.
	feeds []*budgetFeed
	// namespaces reads namespaces' consumer labels from the manager's
	// informer store; nil outside a manager.
	namespaces *namespaceStore
}

var _ reconcile.Reconciler = &Reconciler{}

// NewReconciler returns a Reconciler serving class with h, for users who
// build their own controller: pass it to SetupWithManager with your
// builder. c reads slices (and Tenants, unless WithoutTenantRule) and
// patches their status; with a manager, pass mgr.GetClient() so reads come
// from the cache. It takes decision options only: the controller options
// (WithMaxConcurrentReconciles, WithRetryBackoff, WithLogger, WithWatch,
// WithClassLease) configure a controller NewReconciler does not build, and
// do not compile here; set workers, backoff and logger on your builder
// instead. It returns an error naming the class for a reserved or invalid
// class, a nil handler or client, or a bad option.
func NewReconciler(c client.Client, class string, h handler.Handler, opts ...DecisionOption) (*Reconciler, error) {
	if err := ValidateClass(class); err != nil {
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

// collaborators are what a Reconciler works with besides its client and
// its options. The zero value is a Reconciler on its client alone
// (NewReconciler); a manager gives the rest (see bindClass).
type collaborators struct {
	// status writes the status; nil writes through the client.
	status statusWriter
	// views is the manager's status.class view; nil outside a manager.
	views *statusClasses
	// recorder records events; nil takes WithEventRecorder's, else none.
	recorder events.EventRecorder
	// ownedReader reads owned objects' metadata; nil reads through the
	// client.
	ownedReader client.Reader
	// feeds are the budgets' feeds, in WithBudget's order.
	feeds []*budgetFeed
	// namespaces is the manager's namespace store.
	namespaces *namespaceStore
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

// newReconciler builds the Reconciler, once, from its configuration, its
// state and its collaborators.
func newReconciler(c client.Client, class string, h handler.Handler, cfg *config, st *classState, with collaborators) (*Reconciler, error) {
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
	status := with.status
	if status == nil {
		status = clientStatus{c: c}
	}
	ownedReader := with.ownedReader
	if ownedReader == nil {
		ownedReader = c
	}
	o, err := newOwnedObjects(h, c, ownedReader, class, cfg.ownedTypes)
	if err != nil {
		return nil, fmt.Errorf("class %q: %w", class, err)
	}
	r := &Reconciler{
		classState: st,
		client:     c,
		status:     status,
		scope:      scope{class: class, selector: cfg.selector, status: with.views},
		handler:    h,
		cfg:        cfg,
		recorder:   rec,
		fieldOwner: client.FieldOwner(FieldManager(class)),
		owned:      o,
		feeds:      with.feeds,
		namespaces: with.namespaces,
	}
	r.calls = &handlerCalls{h: h, timeout: cfg.timeout, class: class, metrics: st.metrics, warn: r.warn}
	return r, nil
}

// FieldManager is the field manager of every status patch the controller for
// class makes: "sliceclass-<class>", so managedFields say which class
// controller decided a slice.
func FieldManager(class string) string { return "sliceclass-" + class }

// Reconcile decides one slice, in three steps: fetch and guards, decide
// (tenant rule or handler, then the budget), save. It returns an error only
// when the slice must be retried with backoff, or a terminal error when
// retrying cannot help (the handler broke its contract, the API server
// rejected the status as invalid).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	// 1. Fetch and guards: a slice gone, being deleted or no longer ours
	// gives back what it held; one not yet authenticated waits; one whose
	// handler kept failing waits for a change.
	current, err := r.fetch(ctx, req)
	if err != nil {
		return ctrl.Result{}, r.errorf(req, "getting the slice: %w", err)
	}
	if current == nil || !r.scope.serves(current) {
		r.release(req)
		if err := r.observeOutside(ctx, req, current); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
		var uid types.UID
		if current != nil {
			uid = current.UID
		}
		if err := r.removeOwned(ctx, current, req.NamespacedName, uid); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
		if ctx, err = r.releaseContext(ctx, current); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
		if err := r.settleHolding(ctx, req.NamespacedName, false); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
		return ctrl.Result{}, nil
	}
	if r.cfg.authGate && !conditions.IsAuthenticated(current) {
		r.leaveLine(req)
		log.FromContext(ctx).V(1).Info("waiting for Liqo to accept the slice's authentication")
		return ctrl.Result{}, nil
	}
	consumer, err := r.consumerOf(ctx, current)
	if err != nil {
		r.leaveLine(req)
		return ctrl.Result{}, r.errorf(req, "%w", err)
	}
	ctx = withConsumer(ctx, consumer) // for Owned and Release too
	if len(r.ledgers) > 0 {
		switch wait, err := r.observe(ctx, current, consumer); {
		case err != nil:
			r.leaveLine(req)
			return ctrl.Result{}, r.errorf(req, "%w", err)
		case wait:
			return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
		}
	}
	r.warnOverGrant(req, current)
	if r.releaser() != nil {
		if err := r.seedHolding(ctx); err != nil {
			return ctrl.Result{}, r.errorf(req, "%w", err)
		}
	}
	if r.retries.skip(req.NamespacedName, current.ResourceVersion) {
		r.leaveLine(req)
		return ctrl.Result{}, nil
	}

	// 2. Decide: the tenant rule or the handler, validated; then the budget
	// admits the offer or turns it into a BudgetExhausted denial.
	d, err := r.decide(withConsumer(ctx, consumer), current)
	if err != nil {
		r.leaveLine(req)
		if isHandlerFailure(err) && r.retries.fail(req.NamespacedName, current.ResourceVersion) {
			r.metrics.gaveUp.WithLabelValues(r.scope.class).Inc()
			r.warn(current, ReasonGaveUp, actionHandle, "class %q gave up after %d consecutive handler failures; the slice is tried again on its next change: %v",
				r.scope.class, r.cfg.maxRetries, err)
			return r.withResync(ctrl.Result{}), nil
		}
		return ctrl.Result{}, r.errorf(req, "%w", err)
	}
	r.retries.forget(req.NamespacedName)
	var attempts []*ledger.Attempt
	if len(r.ledgers) > 0 {
		if d.handled {
			d.out = ownedCopy(d.desired)
		}
		attempts = r.admit(req, current, d.desired, consumer)
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
		r.done(attempts, ledger.NotApplied) // the cluster already shows it
	default:
		switch outcome, err := r.write(ctx, req, current, d.desired, attempts, consumer); {
		case err != nil:
			r.remember(req, current, d, err)
			return ctrl.Result{}, r.errorf(req, "%w", err)
		case outcome == writeConflicted:
			r.remember(req, current, d, nil)
			return ctrl.Result{RequeueAfter: r.conflicts.When(req)}, nil
		case outcome == writeGone:
			if err := r.removeOwned(ctx, nil, req.NamespacedName, ""); err != nil {
				return ctrl.Result{}, r.errorf(req, "%w", err)
			}
			if err := r.settleHolding(ctx, req.NamespacedName, false); err != nil {
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

// decision is what the decide step settled on.
type decision struct {
	desired *authv1beta1.ResourceSlice
	result  ctrl.Result
	// handled is set when desired is the handler's decision (called now or
	// remembered); inputs are what it depended on, out its output before a
	// budget's verdict (set only when a budget may change desired).
	handled bool
	inputs  decisionInputs
	out     *authv1beta1.ResourceSlice
}

// remember keeps the handler's decision whose write did not go through, to
// send it again if nothing changes before the retry.
func (r *Reconciler) remember(req reconcile.Request, current *authv1beta1.ResourceSlice, d decision, err error) {
	if !d.handled || errors.Is(err, reconcile.TerminalError(nil)) {
		return
	}
	out := d.out
	if out == nil {
		out = ownedCopy(d.desired)
	}
	r.memos.put(req.NamespacedName, &decisionMemo{inputs: d.inputs, base: ownedCopy(current), out: out, result: d.result})
}

// fetch reads the slice from the cache; nil when it is gone.
func (r *Reconciler) fetch(ctx context.Context, req reconcile.Request) (*authv1beta1.ResourceSlice, error) {
	var rs authv1beta1.ResourceSlice
	if err := r.client.Get(ctx, req.NamespacedName, &rs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &rs, nil
}

// decide applies the tenant rule and, unless it settled the slice, calls the
// handler and keeps the owned fields of its output.
func (r *Reconciler) decide(ctx context.Context, current *authv1beta1.ResourceSlice) (decision, error) {
	consumer, mismatch, err := r.trustedConsumer(ctx, current)
	if err != nil {
		return decision{}, err
	}
	if mismatch != "" {
		desired := current.DeepCopy()
		// Whatever the gate: a slice claiming another consumer is never
		// handed to the handler.
		desired.Status.Resources = nil
		conditions.Deny(desired, reasonConsumerMismatch, "the slice's consumer claims disagree: "+mismatch)
		if !conditions.IsDenied(current) || conditions.Get(current, conditions.Resources).Reason != reasonConsumerMismatch {
			r.warn(current, reasonConsumerMismatch, actionValidate, "class %q refuses the slice: %s", r.scope.class, mismatch)
		}
		return decision{desired: desired}, nil
	}
	if r.cfg.tenantRule {
		desired := current.DeepCopy()
		settled, err := r.applyTenantRule(ctx, current, desired, consumer)
		if err != nil || settled {
			return decision{desired: desired}, err
		}
	}
	in := r.inputsOf(current, consumer)
	if m := r.memos.take(client.ObjectKeyFromObject(current), current, in); m != nil {
		// The handler decided this already and nothing it sees changed:
		// send the same decision again.
		desired := current.DeepCopy()
		copyOwned(desired, m.out)
		return decision{desired: desired, result: m.result, handled: true, inputs: in}, nil
	}
	out := current.DeepCopy()
	res, err := r.calls.call(ctx, current, out)
	if err != nil {
		return decision{}, err
	}
	if err := validate(out); err != nil {
		r.metrics.errors.WithLabelValues(r.scope.class, errKindContract).Inc()
		reason := reasonNoDecision
		if errors.Is(err, errNegative) || errors.Is(err, errTooLarge) {
			reason = reasonInvalidResources
		}
		r.warn(current, reason, actionValidate, "class %q handler broke its contract: %v", r.scope.class, err)
		return decision{}, reconcile.TerminalError(fmt.Errorf("handler broke its contract: %w", err))
	}
	// The handler's copy is the decision when it changed only what a class
	// controller owns (the usual case: no second copy of the slice);
	// otherwise its owned fields go onto a fresh copy of current.
	desired := out
	if changed := foreignChanges(current, out); len(changed) > 0 {
		r.warn(current, reasonChangesDiscarded, actionValidate,
			"class %q handler changed fields a class controller does not own; discarded: %s", r.scope.class, strings.Join(changed, ", "))
		desired = current.DeepCopy()
		copyOwned(desired, out)
	}
	return decision{desired: desired, result: res, handled: true, inputs: in}, nil
}

// applyTenantRule denies desired as Liqo would for a Drained tenant, or a
// Cordoned one when the slice is undecided; settled reports that the
// handler must not be called.
func (r *Reconciler) applyTenantRule(ctx context.Context, current, desired *authv1beta1.ResourceSlice, consumer string) (settled bool, err error) {
	tc, err := r.tenantCondition(ctx, current, consumer)
	if err != nil {
		return false, err
	}
	switch tc {
	case authv1beta1.TenantConditionDrained:
		conditions.Deny(desired, reasonTenantDrained, "the consumer's Tenant is drained")
		return true, nil
	case authv1beta1.TenantConditionCordoned:
		if !conditions.IsDecided(current) {
			conditions.Deny(desired, reasonTenantCordoned, "the consumer's Tenant is cordoned: no new resources")
		}
		return true, nil
	}
	return false, nil
}

// admit asks the class's budgets to admit an acceptance, all at once. An
// offer that does not fit leaves a slice Accepted with what it holds (its
// growth waits) and turns any other acceptance into a denial with the
// refusing budget's reason; either way the slice waits in line. A denial
// takes the slice out of the lines and releases nothing: the cluster still
// shows what it holds.
func (r *Reconciler) admit(req reconcile.Request, current, desired *authv1beta1.ResourceSlice, consumer consumerInfo) []*ledger.Attempt {
	h := r.holder(req)
	if !conditions.IsAccepted(desired) {
		r.leaveLine(req)
		return nil
	}
	r.applyCaps(req, current, desired)
	ask := ledger.Request{Holder: h, UID: current.UID, Base: current.ResourceVersion, Created: current.CreationTimestamp.Time,
		Consumer: consumer.id, Offer: desired.Status.Resources, Priority: r.cfg.priority}
	if r.cfg.dryRun { // consulted, not charged
		if refusal := ledger.CheckAll(r.ledgers, ask); refusal != nil {
			r.short(current, desired, refusal)
		}
		return nil
	}
	as, refusal := ledger.AdmitAll(r.ledgers, ask)
	if refusal != nil {
		r.short(current, desired, refusal)
	}
	return as
}

// applyCaps caps an acceptance of a slice that yields capacity to a
// higher priority (budget.WithPreemption): its offer is at most what it
// keeps, per resource, and its condition says so, with reason
// budget.ReasonReclaimed and a Warning event when that is new.
func (r *Reconciler) applyCaps(req reconcile.Request, current, desired *authv1beta1.ResourceSlice) {
	var msgs []string
	for _, l := range r.ledgers {
		c, ok := l.Cap(req.NamespacedName)
		if !ok {
			continue
		}
		for n, keep := range c.Keep {
			if q, ok := desired.Status.Resources[n]; ok && q.Cmp(keep) > 0 {
				desired.Status.Resources[n] = keep.DeepCopy()
			}
		}
		msgs = append(msgs, c.Message)
	}
	if len(msgs) == 0 {
		return
	}
	msg := strings.Join(msgs, "; ")
	conditions.Accept(desired, budget.ReasonReclaimed, msg)
	if was := conditions.Get(current, conditions.Resources); !r.cfg.dryRun && (was == nil || was.Reason != budget.ReasonReclaimed || was.Message != msg) {
		r.metrics.reclaimed.WithLabelValues(r.scope.class).Inc()
		r.warn(current, budget.ReasonReclaimed, actionAdmit, "class %q: %s", r.scope.class, msg)
	}
}

// warnOverGrant records a Warning event OverGrant, once per change, when
// the slice's running pods use more than it was granted (a provider that
// turned Liqo's enforcement off lets them; the budget counts what they
// use).
func (r *Reconciler) warnOverGrant(req reconcile.Request, current *authv1beta1.ResourceSlice) {
	for _, l := range r.ledgers {
		over := l.OverGrantOf(req.NamespacedName)
		if len(over) == 0 {
			r.overGrants.changed(req.NamespacedName, l.Name(), "") // forgets a past one
			continue
		}
		var parts []string
		for _, n := range sortedResourceNames(over) {
			q := over[n]
			parts = append(parts, fmt.Sprintf("%s %s", n, q.String()))
		}
		note := strings.Join(parts, ", ")
		if !r.overGrants.changed(req.NamespacedName, l.Name(), note) {
			continue
		}
		r.warn(current, reasonOverGrant, actionAdmit, "class %q: the slice's running pods use more than it was granted, by %s (budget %s counts what they use)",
			r.scope.class, note, l.Name())
	}
}

// short turns desired into what the SDK writes when its offer does not fit
// a budget: an Accepted slice keeps its current offer (a Warning event and
// the condition's message name what is short), any other is denied.
func (r *Reconciler) short(current, desired *authv1beta1.ResourceSlice, refusal *ledger.Refusal) {
	if !conditions.IsAccepted(current) {
		desired.Status.Resources = nil
		conditions.Deny(desired, refusal.Reason, refusal.Message)
		return
	}
	// The condition says what blocks the growth now, with the figures: the
	// budget wakes a waiting slice when they change.
	was := conditions.Get(current, conditions.Resources)
	note := "keeps its current offer; the larger one waits: " + refusal.Message
	copyOwned(desired, current)
	conditions.Accept(desired, was.Reason, note)
	if was.Message != note && !r.cfg.dryRun {
		r.countShort(refusal.Reason)
		r.warn(current, refusal.Reason, actionAdmit, "class %q: the slice keeps its current offer; the larger one waits: %s", r.scope.class, refusal.Message)
	}
}

// countShort counts a slice kept from what it asked by a budget.
func (r *Reconciler) countShort(reason string) {
	if reason == budget.ReasonConsumerLimit {
		r.metrics.consumerLimited.WithLabelValues(r.scope.class).Inc()
		return
	}
	r.metrics.exhausted.WithLabelValues(r.scope.class).Inc()
}

// observe makes sure the budgets' ledgers are not ahead of the slice the
// cache shows, before deciding: wait asks for a retry shortly when they are
// (the cache has not seen the SDK's own last write, or an event the budget
// feed delivered). Under a manager the feeds are the ledgers' one source of
// observations, and settle the writes whose answers were lost; without one
// (NewReconciler on a client of its own) the Reconciler tells them what it
// reads.
func (r *Reconciler) observe(ctx context.Context, current *authv1beta1.ResourceSlice, consumer consumerInfo) (wait bool, err error) {
	for _, f := range r.feeds {
		if err := f.WaitForSync(ctx); err != nil {
			return false, err
		}
	}
	key := client.ObjectKeyFromObject(current)
	if len(r.feeds) == 0 {
		if err := r.seedLedger(ctx); err != nil {
			return false, err
		}
		r.observeSlice(observation(r.scope, current, consumer.id))
	}
	for _, l := range r.ledgers {
		if l.Ahead(key, current.UID, current.ResourceVersion) {
			return true, nil
		}
	}
	return false, nil
}

func (r *Reconciler) observeSlice(o ledger.Slice) {
	for _, l := range r.ledgers {
		l.ObserveSlice(o)
	}
}

// observeOutside tells the budgets about a slice the class does not serve
// now: gone (always: the cache may be ahead of the feed), or, when no feed
// does, being deleted or moved away.
func (r *Reconciler) observeOutside(ctx context.Context, req reconcile.Request, current *authv1beta1.ResourceSlice) error {
	if len(r.ledgers) == 0 || len(r.feeds) > 0 {
		return nil // the feeds observe every slice, deletions included
	}
	if current == nil {
		for _, l := range r.ledgers {
			l.ForgetSlice(req.NamespacedName, "")
		}
		return nil
	}
	consumer, err := r.consumerOf(ctx, current)
	if err != nil {
		return err
	}
	r.observeSlice(observation(r.scope, current, consumer.id))
	return nil
}

// seedLedger tells the ledger, once, what every slice the client lists
// holds: without a manager there is no feed, and a restarted controller
// must count what its predecessor granted before admitting anything.
func (r *Reconciler) seedLedger(ctx context.Context) error {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	if r.seeded {
		return nil
	}
	var list authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing slices to count what they hold: %w", err)
	}
	for i := range list.Items {
		consumer, err := r.consumerOf(ctx, &list.Items[i])
		if err != nil {
			return err
		}
		r.observeSlice(observation(r.scope, &list.Items[i], consumer.id))
	}
	r.seeded = true
	return nil
}

type writeOutcome int

const (
	written writeOutcome = iota
	writeConflicted
	writeGone
)

// write patches desired's owned fields with one optimistic-lock merge patch
// against current and records the decision transition.
func (r *Reconciler) write(ctx context.Context, req reconcile.Request, current, desired *authv1beta1.ResourceSlice, a []*ledger.Attempt, consumer consumerInfo) (writeOutcome, error) {
	// The patch is computed from current to desired: a JSON merge patch of
	// the owned fields that changed, plus metadata.resourceVersion. Fields
	// the Go types do not know are never in it.
	err := r.status.patchStatus(ctx, desired, ownedPatch{from: current}, r.fieldOwner)
	switch {
	case err == nil:
		r.done(a, ledger.Applied)
		if len(r.feeds) == 0 {
			r.observeSlice(observation(r.scope, desired, consumer.id)) // the server's answer
		}
		r.recordTransition(ctx, current, desired)
		return written, nil
	case apierrors.IsConflict(err):
		r.done(a, ledger.NotApplied)
		log.FromContext(ctx).V(1).Info("status write conflicted with another writer, retrying")
		return writeConflicted, nil
	case apierrors.IsNotFound(err):
		r.done(a, ledger.NotApplied)
		r.release(req)
		for _, l := range r.ledgers {
			l.ForgetSlice(req.NamespacedName, current.UID)
		}
		return writeGone, nil
	case apierrors.IsInvalid(err):
		r.done(a, ledger.NotApplied)
		r.warn(current, reasonStatusRejected, actionWrite, "API server rejected the status of class %q: %v", r.scope.class, err)
		return written, reconcile.TerminalError(fmt.Errorf("status rejected: %w", err))
	default:
		// The outcome is unknown (the server may have applied it): the
		// budget keeps counting the offer until the watch, or one read of
		// the slice, shows whether it was applied.
		o := ledger.Lost
		if errors.As(err, new(apierrors.APIStatus)) {
			o = ledger.Unknown // the server answered: it is done with the request
		}
		r.done(a, o)
		for i, f := range r.feeds {
			if i < len(a) && a[i] != nil {
				f.settleLater(req.NamespacedName, current.ResourceVersion, o)
			}
		}
		return written, fmt.Errorf("patching status: %w", err)
	}
}

// recordTransition counts, logs and (per WithDecisionEvents) records an
// event when the decision's status or reason changed.
func (r *Reconciler) recordTransition(ctx context.Context, current, desired *authv1beta1.ResourceSlice) {
	before, after := conditions.Get(current, conditions.Resources), conditions.Get(desired, conditions.Resources)
	if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason) {
		return
	}
	outcome := outcomeAccepted
	if after.Status == conditions.Denied {
		outcome = outcomeDenied
	}
	r.metrics.decisions.WithLabelValues(r.scope.class, outcome).Inc()
	if after.Reason == budget.ReasonExhausted || after.Reason == budget.ReasonConsumerLimit {
		r.countShort(after.Reason)
	}
	r.decisionEvent(desired, after)
	log.FromContext(ctx).Info("decided", "decision", after.Status, "reason", after.Reason)
}

func (r *Reconciler) withResync(res ctrl.Result) ctrl.Result {
	if d := r.cfg.resync; d > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > d) {
		res.RequeueAfter = d
	}
	return res
}

func (r *Reconciler) errorf(req reconcile.Request, format string, args ...any) error {
	return fmt.Errorf("ResourceSlice %s, class %q: %w", req.NamespacedName, r.scope.class, fmt.Errorf(format, args...))
}

// The budget's bookkeeping around a write; all no-ops without a budget.

func (r *Reconciler) holder(req reconcile.Request) ledger.Holder {
	return ledger.Holder{Class: r.scope.class, Key: req.NamespacedName}
}

func (r *Reconciler) done(as []*ledger.Attempt, o ledger.Outcome) {
	for i, a := range as {
		r.ledgers[i].Done(a, o)
	}
}

// leaveLine takes the slice out of the budget's waiting line: its
// reconcile ended without reaching the budget.
func (r *Reconciler) leaveLine(req reconcile.Request) {
	for _, l := range r.ledgers {
		l.Leave(r.holder(req))
	}
}

func (r *Reconciler) release(req reconcile.Request) {
	r.conflicts.Forget(req)
	r.retries.forget(req.NamespacedName) // a slice gone or not ours keeps no failure count
	r.memos.forget(req.NamespacedName)
	r.overGrants.forget(req.NamespacedName)
	r.leaveLine(req)
}

// held lists what the class's Accepted slices hold, from the cache: the
// budget's rebuild after a restart or a failover.
func (r *Reconciler) held(ctx context.Context) (map[types.NamespacedName]corev1.ResourceList, error) {
	var list authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[types.NamespacedName]corev1.ResourceList{}
	for i := range list.Items {
		rs := &list.Items[i]
		if r.scope.serves(rs) && conditions.IsAccepted(rs) {
			out[client.ObjectKeyFromObject(rs)] = rs.Status.Resources.DeepCopy()
		}
	}
	return out, nil
}

// dryRun reports what would be written: a Normal DryRun event and a
// dry-run outcome for a would-be transition; nothing is written.
func (r *Reconciler) dryRun(ctx context.Context, current, desired *authv1beta1.ResourceSlice) {
	if ownedEqual(current, desired) {
		return
	}
	before, after := conditions.Get(current, conditions.Resources), conditions.Get(desired, conditions.Resources)
	if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason) {
		log.FromContext(ctx).V(1).Info("dry run: the offer would change", "reason", after.Reason)
		return
	}
	outcome := outcomeDryRunAccepted
	if after.Status == conditions.Denied {
		outcome = outcomeDryRunDenied
	}
	r.metrics.decisions.WithLabelValues(r.scope.class, outcome).Inc()
	r.recorder.Eventf(current, nil, corev1.EventTypeNormal, after.Reason, actionDryRun, "%s",
		truncate(fmt.Sprintf("dry run: class %q would set Resources %s (%s): %s", r.scope.class, after.Status, after.Reason, after.Message)))
	log.FromContext(ctx).Info("dry run: would decide", "decision", after.Status, "reason", after.Reason)
}

var (
	errNegative = errors.New("negative quantity")
	// errTooLarge: beyond int64 some quantities serialise as another value
	// (1000E and 1000000P are written as "1"), so the consumer would get a
	// different offer from the one the handler and the budget saw; the
	// bound refuses them all rather than tell which.
	errTooLarge = errors.New("quantity larger than " + maxQuantity.String())
	maxQuantity = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
)

// validate checks the handler's output: exactly one Resources condition,
// Accepted or Denied, and no negative quantity in status.resources, nor one
// beyond int64.
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
	var large []string
	for name, q := range rs.Status.Resources {
		if q.Cmp(maxQuantity) > 0 {
			large = append(large, string(name))
		}
	}
	if len(large) > 0 {
		sort.Strings(large)
		return fmt.Errorf("%w in status.resources: %s", errTooLarge, strings.Join(large, ", "))
	}
	return nil
}
