package resourceslice

import (
	"bytes"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/conditions"
)

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
			return conditions.Equal(ca, cb) && (ca == nil || ca.LastTransitionTime.Equal(&cb.LastTransitionTime))
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
		if s.Conditions[i].Type == conditions.Resources {
			return &s.Conditions[i]
		}
	}
	return nil
}

func otherConditions(s *authv1beta1.ResourceSliceStatus) []authv1beta1.ResourceSliceCondition {
	var out []authv1beta1.ResourceSliceCondition
	for _, c := range s.Conditions {
		if c.Type != conditions.Resources {
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
