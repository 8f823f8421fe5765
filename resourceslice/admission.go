package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/feed"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// Admission: everything between the handler's decision and the budgets'
// ledgers. A reconcile reaches them at four points, all here: ready
// before deciding (the ledgers are not ahead of the slice the cache shows;
// outside a manager, they are told what the reconciler reads); admit after
// deciding (every budget of the class at once; applyCaps and short turn a
// reclaim or a refusal into what is written); settle after the write (the
// ticket admit left ends with the write's outcome); and leave / leaveLine
// when the slice is not (or no longer) waiting.

// ticket is what admit leaves for settle: the budgets' attempts for one
// status write, and what the write was decided on.
type ticket struct {
	key      types.NamespacedName
	uid      types.UID
	base     string // the resourceVersion decided on
	consumer string
	attempts []*ledger.Attempt
}

// admit asks the class's budgets to admit an acceptance, all at once. An
// offer that does not fit leaves a slice Accepted with what it holds (its
// growth waits) and turns any other acceptance into a denial with the
// refusing budget's reason; either way the slice waits in line. (A denial
// does not reach the budgets: the reconcile takes the slice out of their
// lines, and releases nothing: the cluster still shows what it holds.)
//
// A budget whose books are not counted (its feed not synced yet, as a new
// leader starts, or stopped: the manager stopping or its classes
// replaced), or a member of its cohort in that state, decides nothing:
// admit returns an error (the request is retried with backoff) and
// nothing is written.
func (r *classReconciler) admit(req reconcile.Request, current, desired *authv1beta1.ResourceSlice, consumer consumerInfo) (ticket, error) {
	t := ticket{key: req.NamespacedName, uid: current.UID, base: current.ResourceVersion, consumer: consumer.ID}
	h := r.holder(req)
	r.applyCaps(req, current, desired)
	ask := ledger.Request{Holder: h, UID: current.UID, Base: current.ResourceVersion, Created: current.CreationTimestamp.Time,
		Consumer: consumer.ID, Offer: desired.Status.Resources, Priority: r.cfg.priority}
	var refusal *ledger.Refusal
	if r.cfg.dryRun { // consulted, not charged
		refusal = ledger.CheckAll(r.ledgers, ask)
	} else {
		t.attempts, refusal = ledger.AdmitAll(r.ledgers, ask)
	}
	switch {
	case refusal == nil:
	case refusal.Reason == ledger.ReasonNotCounted:
		return ticket{}, errors.New(refusal.Message)
	default:
		r.short(current, desired, refusal)
	}
	return t, nil
}

// settle ends a ticket's attempts with what became of the write: the
// budgets count an applied offer until the cluster shows it, forget a
// refused one at once, and keep a lost one until the watch, or one read
// of the slice (the feed's settleLater), shows whether it was applied. A
// slice found gone is forgotten. With no feed, the reconciler tells the
// budgets what the API server answered.
func (r *classReconciler) settle(t ticket, w writeOutcome, o ledger.Outcome, answer *authv1beta1.ResourceSlice) {
	for i, a := range t.attempts {
		r.ledgers[i].Done(a, o)
	}
	switch {
	case w == writeGone:
		for _, l := range r.ledgers {
			l.ForgetSlice(t.key, t.uid)
		}
	case o == ledger.Applied && len(r.feeds) == 0 && answer != nil:
		r.observeSlice(answer, t.consumer)
	case o == ledger.Lost || o == ledger.Unknown:
		for i, f := range r.feeds {
			if i < len(t.attempts) && t.attempts[i] != nil {
				f.SettleLater(t.key, t.base, o)
			}
		}
	}
}

// applyCaps caps an acceptance of a slice that yields capacity to a
// higher priority (budget.WithPreemption): its offer is at most what it
// keeps, per resource, and its condition says so, with reason
// budget.ReasonReclaimed and a Warning event when that is new.
func (r *classReconciler) applyCaps(req reconcile.Request, current, desired *authv1beta1.ResourceSlice) {
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
	if !r.cfg.dryRun && shrinks(current, desired) {
		// One reclaim, one Warning event: the write that shrinks the
		// offer. Rewrites of the same offer (another message) and the
		// decision event of the same transition record none.
		r.metrics.reclaimed.WithLabelValues(r.scope.class).Inc()
		r.warn(current, budget.ReasonReclaimed, actionAdmit, "class %q: %s", r.scope.class, msg)
	}
}

// shrinks reports whether desired offers less of some resource than
// current does as Accepted.
func shrinks(current, desired *authv1beta1.ResourceSlice) bool {
	if !conditions.IsAccepted(current) {
		return false
	}
	for n, was := range current.Status.Resources {
		if now, ok := desired.Status.Resources[n]; !ok || now.Cmp(was) < 0 {
			return true
		}
	}
	return false
}

// warnOverGrant records a Warning event OverGrant, once per change, when
// the slice's running pods use more than it was granted (a provider that
// turned Liqo's enforcement off lets them; the budget counts what they
// use).
func (r *classReconciler) warnOverGrant(req reconcile.Request, current *authv1beta1.ResourceSlice) {
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
func (r *classReconciler) short(current, desired *authv1beta1.ResourceSlice, refusal *ledger.Refusal) {
	if !conditions.IsAccepted(current) {
		desired.Status.Resources = nil
		conditions.Deny(desired, refusal.Reason, refusal.Message)
		return
	}
	// The condition says what blocks the growth now, in kind (no figure
	// that moves with other slices): the budget wakes a waiting slice when
	// that changes, and only then is it written again.
	was := conditions.Get(current, authv1beta1.ResourceSliceConditionTypeResources)
	note := "keeps its current offer; the larger one waits: " + refusal.Message
	if was.Reason == budget.ReasonReclaimed {
		// Shrunk by a reclaim: the reason stays what put it where it is,
		// and its one Warning event was the shrink's. The message says
		// what its growth waits for now.
		note = "reclaimed: keeps its current offer; the larger one waits: " + refusal.Message
	}
	copyOwned(desired, current)
	conditions.Accept(desired, was.Reason, note)
	if was.Message != note && !r.cfg.dryRun && was.Reason != budget.ReasonReclaimed {
		r.countShort(refusal.Reason)
		r.warn(current, refusal.Reason, actionAdmit, "class %q: the slice keeps its current offer; the larger one waits: %s", r.scope.class, refusal.Message)
	}
}

// countShort counts a slice kept from what it asked by a budget, by the
// refusal's reason.
func (r *classReconciler) countShort(reason string) {
	switch reason {
	case budget.ReasonConsumerLimit:
		r.metrics.consumerLimited.WithLabelValues(r.scope.class).Inc()
	case budget.ReasonUnavailable:
		r.metrics.unavailable.WithLabelValues(r.scope.class).Inc()
	default:
		r.metrics.exhausted.WithLabelValues(r.scope.class).Inc()
	}
}

// isBudgetReason reports whether reason is one a budget's refusal writes.
func isBudgetReason(reason string) bool {
	return reason == budget.ReasonExhausted || reason == budget.ReasonConsumerLimit || reason == budget.ReasonUnavailable
}

// ready makes sure the budgets' ledgers are not ahead of the slice the
// cache shows, before deciding (and warns when the slice's pods use more
// than it was granted): wait asks for a retry shortly when they are
// (the cache has not seen the SDK's own last write, or an event the budget
// feed delivered). Under a manager the feeds are the ledgers' one source of
// observations, and settle the writes whose answers were lost; without one
// (buildReconciler on a client of its own) the reconciler tells them what it
// reads.
func (r *classReconciler) ready(ctx context.Context, req reconcile.Request, current *authv1beta1.ResourceSlice, consumer consumerInfo) (wait bool, err error) {
	if len(r.ledgers) == 0 {
		return false, nil
	}
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
		r.observeSlice(current, consumer.ID)
	}
	for _, l := range r.ledgers {
		if l.Ahead(key, current.UID, current.ResourceVersion) {
			return true, nil
		}
	}
	r.warnOverGrant(req, current)
	return false, nil
}

// observeSlice tells the budgets what rs, whose trusted consumer is
// consumer, shows: the reconciler's own reads, when no feed does.
func (r *classReconciler) observeSlice(rs *authv1beta1.ResourceSlice, consumer string) {
	o := feed.Observation(rs, r.scope.classOf(rs), consumer)
	for _, l := range r.ledgers {
		l.ObserveSlice(o)
	}
}

// leave takes a slice the class does not serve now out of the budgets'
// waiting lines and, when no feed does, tells them about it: gone, being
// deleted or moved away.
func (r *classReconciler) leave(ctx context.Context, req reconcile.Request, current *authv1beta1.ResourceSlice) error {
	r.leaveLine(req)
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
	r.observeSlice(current, consumer.ID)
	return nil
}

// seedLedger tells the ledger, once, what every slice the client lists
// holds: without a manager there is no feed, and a restarted controller
// must count what its predecessor granted before admitting anything.
func (r *classReconciler) seedLedger(ctx context.Context) error {
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
		r.observeSlice(&list.Items[i], consumer.ID)
	}
	r.seeded = true
	return nil
}

// The budget's bookkeeping around a write; all no-ops without a budget.

func (r *classReconciler) holder(req reconcile.Request) ledger.Holder {
	return ledger.Holder{Class: r.scope.class, Key: req.NamespacedName}
}

// leaveLine takes the slice out of the budgets' waiting lines: its
// reconcile ended without the budgets seeing an acceptance.
func (r *classReconciler) leaveLine(req reconcile.Request) {
	for _, l := range r.ledgers {
		l.Leave(r.holder(req))
	}
}
