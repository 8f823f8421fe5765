package resourceslice

import (
	"context"
	"fmt"
	"sort"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
)

// Event reasons the SDK records on a slice. Decision events carry the reason
// the handler set on the Resources condition instead.
const (
	// reasonHandlerFailed: the handler returned an error; it is retried
	// with backoff unless the error is terminal.
	reasonHandlerFailed = "HandlerFailed"
	// reasonHandlerPanicked: the handler panicked; the panic became an error.
	reasonHandlerPanicked = "HandlerPanicked"
	// reasonNoDecision: the handler returned without setting the Resources
	// condition to Accepted or Denied; not retried.
	reasonNoDecision = "NoDecision"
	// reasonInvalidResources: the handler offered a negative quantity, or
	// one beyond int64 (which would be written as another value); not
	// retried.
	reasonInvalidResources = "InvalidResources"
	// reasonChangesDiscarded: the handler changed fields a class controller
	// does not own; the changes were dropped and the decision saved.
	reasonChangesDiscarded = "ChangesDiscarded"
	// reasonStatusRejected: the API server refused the status patch as
	// invalid; not retried.
	reasonStatusRejected = "StatusRejected"
	// reasonOverGrant: the slice's running pods use more than it was
	// granted (Liqo's enforcement off); once per change of the amount.
	reasonOverGrant = "OverGrant"

	// reasonGaveUp: WithMaxRetries consecutive handler failures; the slice is
	// not retried until it changes, the resync period passes, or a
	// WithWatch pass runs.
	reasonGaveUp = "GaveUp"

	// reasonConsumerMismatch is the Resources condition reason (and a
	// Warning event) when the slice's spec.consumerClusterID or
	// liqo.io/originID label disagrees with its namespace's
	// liqo.io/remote-cluster-id label (or with each other): a consumer
	// claiming to be another. Such a slice is never accepted.
	reasonConsumerMismatch = "ConsumerMismatch"

	// reasonTenantDrained is the Resources condition reason when the SDK
	// denies a slice because its Tenant is Drained.
	reasonTenantDrained = "TenantDrained"
	// reasonTenantCordoned is the Resources condition reason when the SDK
	// denies an undecided slice because its Tenant is Cordoned.
	reasonTenantCordoned = "TenantCordoned"
)

// Event actions (the events API's "action" field).
const (
	actionDecide   = "Decide"
	actionValidate = "Validate"
	actionHandle   = "Handle"
	actionWrite    = "WriteStatus"
	actionAdmit    = "Admit"
	actionDryRun   = "DryRun"
)

// maxNote keeps event notes under the events API's 1 kB limit.
const maxNote = 1000

type discardRecorder struct{}

func (discardRecorder) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}

var _ events.EventRecorder = discardRecorder{}

func (r *classReconciler) warn(rs *authv1beta1.ResourceSlice, reason, action, format string, args ...any) {
	r.recorder.Eventf(rs, nil, corev1.EventTypeWarning, reason, action, "%s", truncate(fmt.Sprintf(format, args...)))
}

// decisionEvent records a Normal event for Accepted and a Warning for Denied,
// with the decision's reason and message, as WithDecisionEvents allows.
func (r *classReconciler) decisionEvent(rs *authv1beta1.ResourceSlice, c *authv1beta1.ResourceSliceCondition) {
	eventType, reason := corev1.EventTypeNormal, c.Reason
	if c.Status == authv1beta1.ResourceSliceConditionDenied {
		eventType = corev1.EventTypeWarning
	}
	switch r.cfg.events {
	case DecisionEventsNone:
		return
	case DecisionEventsDenied:
		if eventType != corev1.EventTypeWarning {
			return
		}
	}
	if reason == "" {
		reason = string(c.Status)
	}
	note := c.Message
	if note == "" {
		note = fmt.Sprintf("resources %s by class %q", c.Status, r.scope.class)
	}
	r.recorder.Eventf(rs, nil, eventType, reason, actionDecide, "%s", truncate(note))
}

func truncate(s string) string {
	if len(s) <= maxNote {
		return s
	}
	return s[:maxNote-3] + "..."
}

// notes remembers, per slice and budget, the last note an event was
// recorded with, so that one is recorded once per change. Asked on every
// reconcile of a budgeted slice, it allocates nothing when nothing changed.
type notes struct {
	mu sync.Mutex
	m  map[noteKey]string
}

type noteKey struct {
	slice  types.NamespacedName
	budget string
}

// changed records note for the slice key in budget and reports whether it
// differs from the last one.
func (n *notes) changed(key types.NamespacedName, budget, note string) bool {
	k := noteKey{key, budget}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m[k] == note {
		return false
	}
	if note == "" {
		delete(n.m, k)
	} else {
		n.m[k] = note
	}
	return true
}

// forget drops what is remembered of the slice key.
func (n *notes) forget(key types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k := range n.m {
		if k.slice == key {
			delete(n.m, k)
		}
	}
}

// sortedResourceNames are rl's names, sorted.
func sortedResourceNames(rl corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// recordTransition counts, logs and (per WithDecisionEvents) records an
// event when the decision's status or reason changed.
func (r *classReconciler) recordTransition(ctx context.Context, current, desired *authv1beta1.ResourceSlice) {
	before, after := conditions.Get(current, authv1beta1.ResourceSliceConditionTypeResources), conditions.Get(desired, authv1beta1.ResourceSliceConditionTypeResources)
	if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason) {
		return
	}
	outcome := outcomeAccepted
	if after.Status == authv1beta1.ResourceSliceConditionDenied {
		outcome = outcomeDenied
	}
	r.metrics.decisions.WithLabelValues(r.scope.class, outcome).Inc()
	if isBudgetReason(after.Reason) {
		r.countShort(after.Reason)
	}
	if after.Reason != budget.ReasonReclaimed { // its Warning event is the shrink's (applyCaps)
		r.decisionEvent(desired, after)
	}
	log.FromContext(ctx).Info("decided", "decision", after.Status, "reason", after.Reason)
}
