package resourceslice

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
)

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
