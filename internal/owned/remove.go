package owned

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Remove deletes every object of the class labelled for the slice: the
// slice was Denied, left the class, or is gone. uid selects the slice's
// objects; an empty uid, when the slice is gone and its UID unknown, selects
// those of every slice that had that namespace and name. Objects of every
// kind known (WithTypes, and those applied since New) are listed; a failed
// list does not stop the others' deletion. What the Applier remembers of
// the slice's applies is forgotten.
func (a *Applier) Remove(ctx context.Context, key types.NamespacedName, uid types.UID) (Report, error) {
	if key.Namespace == "" || key.Name == "" {
		return Report{}, fmt.Errorf("removing the owned objects of slice %q: a namespace and a name are needed", key)
	}
	sel := selectSlice(a.class, uid)
	if uid == "" {
		sel = selectSliceName(a.class, key)
	}
	a.memory.forget(uid, key)
	var r Report
	found := a.list(ctx, a.learn(), sel, &r)
	r.Deleted = a.remove(ctx, found, &r)
	return r, r.err()
}

// Sweep deletes every object of the class whose slice is not live: what no
// ownerReference reaches (cluster-scoped objects, objects in other
// namespaces) and what was left when a slice was deleted, Denied or moved to
// another class while the controller was down. live reports whether the
// slice with that UID still may hold objects: it exists, is in the class,
// and is not Denied. Prefer that to "Accepted as the cache shows": a slice
// being accepted right now is not Accepted in the cache yet, and Sweep
// would delete what its reconcile just applied (until the next reconcile).
//
// Call it only once the slice cache has synced: before, every slice looks
// gone and Sweep deletes every owned object. What the Applier remembers of
// the applies of slices not live is forgotten.
func (a *Applier) Sweep(ctx context.Context, live func(types.UID) bool) (Report, error) {
	if live == nil {
		return Report{}, errors.New("sweeping owned objects: nil live function")
	}
	a.memory.forgetUnless(live)
	var r Report
	var gone []metav1.PartialObjectMetadata
	for _, m := range a.list(ctx, a.learn(), a.swept, &r) {
		if !live(types.UID(m.Labels[LabelSliceUID])) {
			gone = append(gone, m)
		}
	}
	r.Deleted = a.remove(ctx, gone, &r)
	return r, r.err()
}
