package resourceslice

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
)

// copyOwned copies the status fields a class controller owns from src onto
// dst, leaving every other field of dst alone. The Resources condition
// replaces dst's in place (or is appended), so the order and content of the
// other conditions are kept.
func copyOwned(dst, src *authv1beta1.ResourceSlice) {
	dst.Status.Resources = src.Status.Resources.DeepCopy()
	dst.Status.StorageClasses = append(dst.Status.StorageClasses[:0:0], src.Status.StorageClasses...)
	dst.Status.IngressClasses = append(dst.Status.IngressClasses[:0:0], src.Status.IngressClasses...)
	dst.Status.LoadBalancerClasses = append(dst.Status.LoadBalancerClasses[:0:0], src.Status.LoadBalancerClasses...)
	dst.Status.NodeLabels = copyMap(src.Status.NodeLabels)
	dst.Status.NodeSelector = copyMap(src.Status.NodeSelector)
	setResourcesCondition(dst, conditions.Get(src, conditions.Resources))
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

// setResourcesCondition puts c (a copy) as rs's Resources condition; nil
// removes it.
func setResourcesCondition(rs *authv1beta1.ResourceSlice, c *authv1beta1.ResourceSliceCondition) {
	if existing := conditions.Get(rs, conditions.Resources); existing != nil {
		if c == nil {
			out := rs.Status.Conditions[:0]
			for _, x := range rs.Status.Conditions {
				if x.Type != conditions.Resources {
					out = append(out, x)
				}
			}
			rs.Status.Conditions = out
			return
		}
		*existing = *c
		return
	}
	if c != nil {
		rs.Status.Conditions = append(rs.Status.Conditions, *c)
	}
}

// settleTransitionTime gives desired's Resources condition the
// LastTransitionTime it must have: the current one's when the status did not
// change, else the handler's (whole seconds) or now.
func settleTransitionTime(current, desired *authv1beta1.ResourceSlice) {
	d := conditions.Get(desired, conditions.Resources)
	if d == nil {
		return
	}
	if c := conditions.Get(current, conditions.Resources); c != nil && c.Status == d.Status && !c.LastTransitionTime.IsZero() {
		d.LastTransitionTime = c.LastTransitionTime
		return
	}
	if d.LastTransitionTime.IsZero() {
		d.LastTransitionTime = conditions.Now()
		return
	}
	d.LastTransitionTime.Time = d.LastTransitionTime.Truncate(time.Second)
}

// ownedEqual reports whether a and b agree on every field a class controller
// owns (quantities compared by value, nil and empty alike).
func ownedEqual(a, b *authv1beta1.ResourceSlice) bool {
	ca, cb := conditions.Get(a, conditions.Resources), conditions.Get(b, conditions.Resources)
	if !conditions.Equal(ca, cb) {
		return false
	}
	if ca != nil && !ca.LastTransitionTime.Equal(&cb.LastTransitionTime) {
		return false
	}
	return equality.Semantic.DeepEqual(a.Status.Resources, b.Status.Resources) &&
		equality.Semantic.DeepEqual(a.Status.StorageClasses, b.Status.StorageClasses) &&
		equality.Semantic.DeepEqual(a.Status.IngressClasses, b.Status.IngressClasses) &&
		equality.Semantic.DeepEqual(a.Status.LoadBalancerClasses, b.Status.LoadBalancerClasses) &&
		equality.Semantic.DeepEqual(a.Status.NodeLabels, b.Status.NodeLabels) &&
		equality.Semantic.DeepEqual(a.Status.NodeSelector, b.Status.NodeSelector)
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
	if !authParamsEqual(orig.Status.AuthParams, out.Status.AuthParams) {
		changed = append(changed, "status.authParams")
	}
	if !equality.Semantic.DeepEqual(otherConditions(orig), otherConditions(out)) {
		changed = append(changed, "status.conditions (other than Resources)")
	}
	return changed
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

func otherConditions(rs *authv1beta1.ResourceSlice) []authv1beta1.ResourceSliceCondition {
	var out []authv1beta1.ResourceSliceCondition
	for _, c := range rs.Status.Conditions {
		if c.Type != conditions.Resources {
			out = append(out, c)
		}
	}
	return out
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
	a, b := &p.from.Status, &to.Status
	status := map[string]any{}
	if !equality.Semantic.DeepEqual(a.Conditions, b.Conditions) {
		status["conditions"] = listOrNull(b.Conditions)
	}
	if !equality.Semantic.DeepEqual(a.Resources, b.Resources) {
		status["resources"] = mapPatch(a.Resources, b.Resources, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
	}
	if !equality.Semantic.DeepEqual(a.StorageClasses, b.StorageClasses) {
		status["storageClasses"] = listOrNull(b.StorageClasses)
	}
	if !equality.Semantic.DeepEqual(a.IngressClasses, b.IngressClasses) {
		status["ingressClasses"] = listOrNull(b.IngressClasses)
	}
	if !equality.Semantic.DeepEqual(a.LoadBalancerClasses, b.LoadBalancerClasses) {
		status["loadBalancerClasses"] = listOrNull(b.LoadBalancerClasses)
	}
	if !equality.Semantic.DeepEqual(a.NodeLabels, b.NodeLabels) {
		status["nodeLabels"] = mapPatch(a.NodeLabels, b.NodeLabels, stringsEqual)
	}
	if !equality.Semantic.DeepEqual(a.NodeSelector, b.NodeSelector) {
		status["nodeSelector"] = mapPatch(a.NodeSelector, b.NodeSelector, stringsEqual)
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
