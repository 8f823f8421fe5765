package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
)

// The decide step of a reconcile: the consumer check, the tenant rule or
// the handler (remembered when its write did not go through), and the
// validation of what the handler returned.

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
func (r *classReconciler) remember(req reconcile.Request, current *authv1beta1.ResourceSlice, d decision, err error) {
	if !d.handled || errors.Is(err, reconcile.TerminalError(nil)) {
		return
	}
	out := d.out
	if out == nil {
		out = ownedCopy(d.desired)
	}
	r.memos.put(req.NamespacedName, &decisionMemo{inputs: d.inputs, base: ownedCopy(current), out: out, result: d.result})
}

// decide applies the tenant rule and, unless it settled the slice, calls the
// handler and keeps the owned fields of its output.
func (r *classReconciler) decide(ctx context.Context, current *authv1beta1.ResourceSlice) (decision, error) {
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
		if !conditions.IsDenied(current) || conditions.Get(current, authv1beta1.ResourceSliceConditionTypeResources).Reason != reasonConsumerMismatch {
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
func (r *classReconciler) applyTenantRule(ctx context.Context, current, desired *authv1beta1.ResourceSlice, consumer string) (settled bool, err error) {
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

// validate checks the handler's output: exactly one Resources condition,
// Accepted or Denied, and no negative quantity in status.resources, nor one
// beyond int64.
func validate(rs *authv1beta1.ResourceSlice) error {
	n := 0
	for _, c := range rs.Status.Conditions {
		if c.Type == authv1beta1.ResourceSliceConditionTypeResources {
			n++
		}
	}
	switch c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); {
	case n > 1:
		return fmt.Errorf("%d Resources conditions; set it with conditions.Accept or conditions.Deny", n)
	case c == nil:
		return errors.New("no decision: the Resources condition is not set; call conditions.Accept or conditions.Deny")
	case c.Status != authv1beta1.ResourceSliceConditionAccepted && c.Status != authv1beta1.ResourceSliceConditionDenied:
		return fmt.Errorf("no decision: Resources condition status %q is neither %q nor %q", c.Status, authv1beta1.ResourceSliceConditionAccepted, authv1beta1.ResourceSliceConditionDenied)
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

var (
	errNegative = errors.New("negative quantity")
	// errTooLarge: beyond int64 some quantities serialise as another value
	// (1000E and 1000000P are written as "1"), so the consumer would get a
	// different offer from the one the handler and the budget saw; the
	// bound refuses them all rather than tell which.
	errTooLarge = errors.New("quantity larger than " + maxQuantity.String())
	maxQuantity = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
)
