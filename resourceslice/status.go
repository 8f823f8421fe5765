package resourceslice

import (
	"bytes"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"

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
