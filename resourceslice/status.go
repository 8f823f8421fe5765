package resourceslice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

// The status write of a decision, in the order a write goes:
//
//   - who owns what: statusFields, the one table of ResourceSliceStatus's
//     fields, which copyOwned, ownedEqual, foreignChanges and the patch all
//     walk;
//   - the patch: settleTransitionTime keeps the Resources condition's
//     LastTransitionTime when its status did not change, and ownedPatch
//     carries only the owned fields that differ and the resourceVersion;
//   - the writer: writeStatus sends the patch through controller-runtime's
//     client, Status().Patch, which updates the slice from the answer
//     (its new resourceVersion included);
//   - the write: reconciler.write sends one and says what its outcome
//     means for the budgets and the retry; dryRun reports what it would
//     write.

// statusField declares who owns one JSON field of ResourceSliceStatus and
// how the SDK copies, compares and patches it. statusFields is the only
// place ownership is written down: copyOwned, ownedEqual, the status patch
// and foreignChanges all walk it, and a guard test fails when Liqo's types
// gain a status field this table does not name.
type statusField struct {
	// json is the field's name under "status".
	json string
	// ours compares the part a class controller owns; nil when it owns none.
	ours func(a, b *authv1beta1.ResourceSliceStatus) bool
	// theirs compares the part Liqo owns; nil when Liqo owns none.
	theirs func(a, b *authv1beta1.ResourceSliceStatus) bool
	// copy copies our part from src onto dst, leaving Liqo's part alone.
	copy func(dst, src *authv1beta1.ResourceSliceStatus)
	// patch is the JSON merge patch value turning from's field into to's.
	patch func(from, to *authv1beta1.ResourceSliceStatus) any
}

// statusFields lists every field of ResourceSliceStatus (liqo v1.2.0).
// Conditions are shared: the Resources condition is ours, every other
// condition (Authentication) is Liqo's.
var statusFields = []statusField{
	{
		json: "conditions",
		ours: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			ca, cb := resourcesCondition(a), resourcesCondition(b)
			return sliceconds.Equal(ca, cb) && (ca == nil || ca.LastTransitionTime.Equal(&cb.LastTransitionTime))
		},
		theirs: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return equality.Semantic.DeepEqual(otherConditions(a), otherConditions(b))
		},
		copy: func(dst, src *authv1beta1.ResourceSliceStatus) {
			setResourcesCondition(dst, resourcesCondition(src))
		},
		patch: func(_, to *authv1beta1.ResourceSliceStatus) any { return listOrNull(to.Conditions) },
	},
	{
		json: "resources",
		ours: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return equality.Semantic.DeepEqual(a.Resources, b.Resources)
		},
		copy: func(dst, src *authv1beta1.ResourceSliceStatus) { dst.Resources = src.Resources.DeepCopy() },
		patch: func(from, to *authv1beta1.ResourceSliceStatus) any {
			return mapPatch(from.Resources, to.Resources, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
		},
	},
	{
		json: "authParams",
		theirs: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return authParamsEqual(a.AuthParams, b.AuthParams)
		},
	},
	{
		json: "storageClasses",
		ours: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return equality.Semantic.DeepEqual(a.StorageClasses, b.StorageClasses)
		},
		copy: func(dst, src *authv1beta1.ResourceSliceStatus) {
			dst.StorageClasses = append(dst.StorageClasses[:0:0], src.StorageClasses...)
		},
		patch: func(_, to *authv1beta1.ResourceSliceStatus) any { return listOrNull(to.StorageClasses) },
	},
	{
		json: "ingressClasses",
		ours: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return equality.Semantic.DeepEqual(a.IngressClasses, b.IngressClasses)
		},
		copy: func(dst, src *authv1beta1.ResourceSliceStatus) {
			dst.IngressClasses = append(dst.IngressClasses[:0:0], src.IngressClasses...)
		},
		patch: func(_, to *authv1beta1.ResourceSliceStatus) any { return listOrNull(to.IngressClasses) },
	},
	{
		json: "loadBalancerClasses",
		ours: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return equality.Semantic.DeepEqual(a.LoadBalancerClasses, b.LoadBalancerClasses)
		},
		copy: func(dst, src *authv1beta1.ResourceSliceStatus) {
			dst.LoadBalancerClasses = append(dst.LoadBalancerClasses[:0:0], src.LoadBalancerClasses...)
		},
		patch: func(_, to *authv1beta1.ResourceSliceStatus) any { return listOrNull(to.LoadBalancerClasses) },
	},
	{
		json: "nodeLabels",
		ours: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return equality.Semantic.DeepEqual(a.NodeLabels, b.NodeLabels)
		},
		copy: func(dst, src *authv1beta1.ResourceSliceStatus) { dst.NodeLabels = copyMap(src.NodeLabels) },
		patch: func(from, to *authv1beta1.ResourceSliceStatus) any {
			return mapPatch(from.NodeLabels, to.NodeLabels, stringsEqual)
		},
	},
	{
		json: "nodeSelector",
		ours: func(a, b *authv1beta1.ResourceSliceStatus) bool {
			return equality.Semantic.DeepEqual(a.NodeSelector, b.NodeSelector)
		},
		copy: func(dst, src *authv1beta1.ResourceSliceStatus) { dst.NodeSelector = copyMap(src.NodeSelector) },
		patch: func(from, to *authv1beta1.ResourceSliceStatus) any {
			return mapPatch(from.NodeSelector, to.NodeSelector, stringsEqual)
		},
	},
}

// copyOwned copies the status fields a class controller owns from src onto
// dst, leaving every other field of dst alone. The Resources condition
// replaces dst's in place (or is appended), so the order and content of the
// other conditions are kept.
func copyOwned(dst, src *authv1beta1.ResourceSlice) {
	for _, f := range statusFields {
		if f.copy != nil {
			f.copy(&dst.Status, &src.Status)
		}
	}
}

// ownedEqual reports whether a and b agree on every field a class controller
// owns (quantities compared by value, nil and empty alike).
func ownedEqual(a, b *authv1beta1.ResourceSlice) bool {
	for _, f := range statusFields {
		if f.ours != nil && !f.ours(&a.Status, &b.Status) {
			return false
		}
	}
	return true
}

// foreignChanges lists the fields outside a class controller's ownership that
// changed between orig and out. Byte fields (the CSR, certificates) are
// compared with bytes.Equal and managedFields are skipped: reflection over
// kilobytes of bytes dominated the reconcile's CPU profile, and metadata is
// never written anyway.
func foreignChanges(orig, out *authv1beta1.ResourceSlice) []string {
	var changed []string
	om, oo := orig.ObjectMeta, out.ObjectMeta
	om.ManagedFields, oo.ManagedFields = nil, nil
	if !equality.Semantic.DeepEqual(om, oo) {
		changed = append(changed, "metadata")
	}
	sa, sb := orig.Spec, out.Spec
	sa.CSR, sb.CSR = nil, nil
	if !bytes.Equal(orig.Spec.CSR, out.Spec.CSR) || !equality.Semantic.DeepEqual(sa, sb) {
		changed = append(changed, "spec")
	}
	for _, f := range statusFields {
		if f.theirs != nil && !f.theirs(&orig.Status, &out.Status) {
			changed = append(changed, "status."+f.json+liqoPart(f))
		}
	}
	return changed
}

// liqoPart qualifies a shared field's name in a ChangesDiscarded note.
func liqoPart(f statusField) string {
	if f.ours != nil {
		return " (other than Resources)"
	}
	return ""
}

func resourcesCondition(s *authv1beta1.ResourceSliceStatus) *authv1beta1.ResourceSliceCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == authv1beta1.ResourceSliceConditionTypeResources {
			return &s.Conditions[i]
		}
	}
	return nil
}

func otherConditions(s *authv1beta1.ResourceSliceStatus) []authv1beta1.ResourceSliceCondition {
	var out []authv1beta1.ResourceSliceCondition
	for _, c := range s.Conditions {
		if c.Type != authv1beta1.ResourceSliceConditionTypeResources {
			out = append(out, c)
		}
	}
	return out
}

func authParamsEqual(a, b *authv1beta1.AuthParams) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !bytes.Equal(a.CA, b.CA) || !bytes.Equal(a.SignedCRT, b.SignedCRT) {
		return false
	}
	x, y := *a, *b
	x.CA, x.SignedCRT, y.CA, y.SignedCRT = nil, nil, nil, nil
	return equality.Semantic.DeepEqual(x, y)
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// setResourcesCondition puts c (a copy) as s's Resources condition; nil
// removes it.
func setResourcesCondition(s *authv1beta1.ResourceSliceStatus, c *authv1beta1.ResourceSliceCondition) {
	if existing := resourcesCondition(s); existing != nil {
		if c == nil {
			s.Conditions = otherConditions(s)
			return
		}
		*existing = *c
		return
	}
	if c != nil {
		s.Conditions = append(s.Conditions, *c)
	}
}

// settleTransitionTime gives desired's Resources condition the
// LastTransitionTime it must have: the current one's when the status did not
// change, else the handler's (whole seconds) or now.
func settleTransitionTime(current, desired *authv1beta1.ResourceSlice) {
	d := conditions.Get(desired, authv1beta1.ResourceSliceConditionTypeResources)
	if d == nil {
		return
	}
	if c := conditions.Get(current, authv1beta1.ResourceSliceConditionTypeResources); c != nil && c.Status == d.Status && !c.LastTransitionTime.IsZero() {
		d.LastTransitionTime = c.LastTransitionTime
		return
	}
	if d.LastTransitionTime.IsZero() {
		d.LastTransitionTime = sliceconds.Now()
		return
	}
	d.LastTransitionTime.Time = d.LastTransitionTime.Truncate(time.Second)
}

// ownedPatch is the status write of a class controller: a JSON merge patch
// from the object it was built with to the object it is applied with,
// carrying only the owned status fields that differ and
// metadata.resourceVersion, so the API server refuses it (409) if anyone
// wrote the slice since it was read.
//
// It yields what client.MergeFromWithOptimisticLock would for two objects
// that differ only in owned fields, without serialising and diffing the
// whole slice (CSR and certificates included): only the changed fields are
// encoded. A list is replaced whole, as merge patches do (so the conditions
// list goes out entire and the resourceVersion protects Liqo's condition in
// it); a map is patched key by key, with null for a removed key; a field
// emptied becomes null.
type ownedPatch struct{ from *authv1beta1.ResourceSlice }

var _ client.Patch = ownedPatch{}

// Type implements client.Patch.
func (ownedPatch) Type() types.PatchType { return types.MergePatchType }

// Data implements client.Patch.
func (p ownedPatch) Data(obj client.Object) ([]byte, error) {
	to, ok := obj.(*authv1beta1.ResourceSlice)
	if !ok {
		return nil, fmt.Errorf("status patch of a ResourceSlice applied to %T", obj)
	}
	if p.from == nil || p.from.ResourceVersion == "" {
		return nil, errors.New("status patch needs the resourceVersion of the slice it was computed from")
	}
	status := map[string]any{}
	for _, f := range statusFields {
		if f.ours != nil && !f.ours(&p.from.Status, &to.Status) {
			status[f.json] = f.patch(&p.from.Status, &to.Status)
		}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": p.from.ResourceVersion},
		"status":   status,
	})
}

// listOrNull is a merge patch's value for a list field: the list, or null
// (remove the field) when it is empty.
func listOrNull[T any](list []T) any {
	if len(list) == 0 {
		return nil
	}
	return list
}

// mapPatch is a merge patch's value turning map from into map to: null when
// to is empty, else to's changed and added keys plus null for each removed
// key.
func mapPatch[M ~map[K]V, K comparable, V any](from, to M, equal func(V, V) bool) any {
	if len(to) == 0 {
		return nil
	}
	out := make(map[K]any, len(to))
	for k, v := range to {
		if old, ok := from[k]; !ok || !equal(old, v) {
			out[k] = v
		}
	}
	for k := range from {
		if _, ok := to[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

func stringsEqual(a, b string) bool { return a == b }

// writeStatus is the one status writer, of every reconciler, the SDK's and
// the test harness's alike: the patch from current to desired, through c's
// status client (Status().Patch). On success desired holds what the API
// server answered, its new resourceVersion included; a conflict, a slice
// gone, or any other failure is c's error, as the API server gave it.
func writeStatus(ctx context.Context, c client.Client, current, desired *authv1beta1.ResourceSlice, owner client.FieldOwner) error {
	return c.Status().Patch(ctx, desired, ownedPatch{from: current}, owner)
}

type writeOutcome int

const (
	written writeOutcome = iota
	writeConflicted
	writeGone
)

// write patches desired's owned fields with one optimistic-lock merge patch
// against current and records the decision transition. It returns what
// became of the write for the budgets' attempts too (settle).
func (r *classReconciler) write(ctx context.Context, current, desired *authv1beta1.ResourceSlice) (writeOutcome, ledger.Outcome, error) {
	// Nothing is sent once the reconcile's context has ended (the
	// controller stopping); a patch sent before is left writeGrace to be
	// answered.
	if err := stopped(ctx); err != nil {
		return written, ledger.NotApplied, fmt.Errorf("status not written: %w", err)
	}
	wctx, cancel := writeContext(ctx)
	defer cancel()
	// The patch is computed from current to desired: a JSON merge patch of
	// the owned fields that changed, plus metadata.resourceVersion. Fields
	// the Go types do not know are never in it.
	err := writeStatus(wctx, r.client, current, desired, r.fieldOwner)
	switch {
	case err == nil:
		r.recordTransition(ctx, current, desired)
		return written, ledger.Applied, nil
	case apierrors.IsConflict(err):
		log.FromContext(ctx).V(1).Info("status write conflicted with another writer, retrying")
		return writeConflicted, ledger.Conflicted, nil
	case apierrors.IsNotFound(err):
		return writeGone, ledger.NotApplied, nil
	case apierrors.IsInvalid(err):
		r.warn(current, reasonStatusRejected, actionWrite, "API server rejected the status of class %q: %v", r.scope.class, err)
		return written, ledger.NotApplied, reconcile.TerminalError(fmt.Errorf("status rejected: %w", err))
	default:
		// The outcome is unknown (the server may have applied it): the
		// budget keeps counting the offer until the watch, or one read of
		// the slice, shows whether it was applied.
		o := ledger.Lost
		if errors.As(err, new(apierrors.APIStatus)) {
			o = ledger.Unknown // the server answered: it is done with the request
		}
		return written, o, fmt.Errorf("patching status: %w", err)
	}
}

// dryRun reports what would be written: a Normal DryRun event and a
// dry-run outcome for a would-be transition; nothing is written.
func (r *classReconciler) dryRun(ctx context.Context, current, desired *authv1beta1.ResourceSlice) {
	if ownedEqual(current, desired) {
		return
	}
	before, after := conditions.Get(current, authv1beta1.ResourceSliceConditionTypeResources), conditions.Get(desired, authv1beta1.ResourceSliceConditionTypeResources)
	if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason) {
		log.FromContext(ctx).V(1).Info("dry run: the offer would change", "reason", after.Reason)
		return
	}
	outcome := outcomeDryRunAccepted
	if after.Status == authv1beta1.ResourceSliceConditionDenied {
		outcome = outcomeDryRunDenied
	}
	r.metrics.decisions.WithLabelValues(r.scope.class, outcome).Inc()
	r.recorder.Eventf(current, nil, corev1.EventTypeNormal, after.Reason, actionDryRun, "%s",
		truncate(fmt.Sprintf("dry run: class %q would set Resources %s (%s): %s", r.scope.class, after.Status, after.Reason, after.Message)))
	log.FromContext(ctx).Info("dry run: would decide", "decision", after.Status, "reason", after.Reason)
}
