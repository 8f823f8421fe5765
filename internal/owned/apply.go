package owned

import (
	"context"
	"errors"
	"fmt"
	"maps"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Apply makes objs the owned objects of rs, a slice Accepted by the class:
//
//  1. each object is checked (see ErrInvalid) and one that exists but is not
//     this slice's is refused (ErrNotOurs), untouched;
//  2. each other object is applied with server-side apply under the field
//     manager "sliceclass-<class>", labelled with the class and the slice
//     (LabelClass, LabelSliceNamespace, LabelSliceName, LabelSliceUID),
//     with a controller ownerReference to rs when it is in rs's namespace.
//     An object that exists and is ours is applied with ForceOwnership (a
//     field someone else changed is taken back); a new one without it;
//  3. only if every object was applied and every list succeeded, the
//     objects earlier applied for rs's UID that objs no longer holds are
//     deleted (pruned). A partial failure prunes nothing.
//
// An object is not sent again when the Applier applied the same content for
// rs before and the reader shows the object at the resourceVersion that
// apply left (Report.Unchanged): nobody deleted or changed it since. See
// memory.go.
//
// The objects in objs are not modified. The error joins the Report's
// failures, each naming its object; errors.Is(err, ErrNotOurs) tells
// whether any was refused as someone else's. The caller adds the slice and
// the class to the error.
func (a *Applier) Apply(ctx context.Context, rs *authv1beta1.ResourceSlice, objs []client.Object) (Report, error) {
	p, err := a.plan(ctx, rs, objs)
	if err != nil {
		return Report{}, err
	}
	r := Report{Failed: p.failed}
	// remembered is what the memory holds for rs once this call ends: the
	// objects of the set now in place as applied. What failed or was
	// refused is applied again next time.
	remembered := make(map[Ref]appliedState, len(p.apply))
	for _, d := range p.apply {
		sum, err := contentSum(d.obj)
		if err != nil {
			r.fail(d.ref, err)
			continue
		}
		if a.memory.unchanged(rs.UID, d.ref, sum, d.seen) {
			r.Unchanged = append(r.Unchanged, d.ref)
			remembered[d.ref] = appliedState{sum: sum, resourceVersion: d.seen}
			continue
		}
		opts := []client.ApplyOption{client.FieldOwner(a.manager)}
		if d.exists {
			opts = append(opts, client.ForceOwnership)
		}
		// The server's answer is decoded into d.obj: its resourceVersion is
		// the one the reader shows while nobody else touches the object.
		if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(d.obj), opts...); err != nil {
			r.fail(d.ref, fmt.Errorf("applying: %w", err))
			continue
		}
		r.Applied = append(r.Applied, d.ref)
		if rv := d.obj.GetResourceVersion(); rv != "" {
			remembered[d.ref] = appliedState{sum: sum, resourceVersion: rv}
		}
	}
	a.memory.replace(rs.UID, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}, remembered)
	if len(r.Failed) == 0 {
		r.Pruned = a.remove(ctx, p.stale, &r)
	}
	return r, r.err()
}

// Plan reports what Apply would apply and prune, writing nothing: the same
// checks, reads and refusals, without the server's validation of the applied
// objects (an object the API server would reject shows as applied).
func (a *Applier) Plan(ctx context.Context, rs *authv1beta1.ResourceSlice, objs []client.Object) (Report, error) {
	p, err := a.plan(ctx, rs, objs)
	if err != nil {
		return Report{}, err
	}
	r := Report{Failed: p.failed}
	for _, d := range p.apply {
		r.Applied = append(r.Applied, d.ref)
	}
	if len(r.Failed) == 0 {
		for i := range p.stale {
			r.Pruned = append(r.Pruned, refOf(&p.stale[i]))
		}
		sortRefs(r.Pruned)
	}
	return r, r.err()
}

// desired is one object of the set, checked, as it will be applied.
type desired struct {
	ref Ref
	obj *unstructured.Unstructured
	// exists when the object is there already, ours: it is applied with
	// ForceOwnership.
	exists bool
	// seen is the resourceVersion of the object as the reader shows it; ""
	// when it was not found.
	seen string
}

// plan is what Apply does, found without writing.
type plan struct {
	apply  []desired
	stale  []metav1.PartialObjectMetadata
	failed []Failure
}

func (a *Applier) plan(ctx context.Context, rs *authv1beta1.ResourceSlice, objs []client.Object) (plan, error) {
	if rs == nil {
		return plan{}, errors.New("nil ResourceSlice")
	}
	if rs.UID == "" {
		return plan{}, fmt.Errorf("slice %s/%s has no UID: pass the slice as read from the API server", rs.Namespace, rs.Name)
	}
	sl, err := sliceLabels(a.class, rs)
	if err != nil {
		return plan{}, err
	}

	// 1. Check each object and build what is applied.
	var p plan
	var r Report
	wanted := map[Ref]bool{}
	for i, obj := range objs {
		d, err := a.desire(rs, sl, obj)
		if err == nil && wanted[d.ref] {
			err = fmt.Errorf("%w: a duplicate in the set", ErrInvalid)
		}
		if err != nil {
			if d.ref == (Ref{}) {
				err = fmt.Errorf("object %d of %d: %w", i+1, len(objs), err)
			}
			r.fail(d.ref, err)
			continue
		}
		wanted[d.ref] = true
		p.apply = append(p.apply, d)
	}

	// 2. Find what exists of the slice's, by label, in every kind known.
	kinds := make([]schema.GroupVersionKind, 0, len(p.apply))
	for _, d := range p.apply {
		kinds = append(kinds, d.ref.GVK)
	}
	listed := a.list(ctx, a.learn(kinds...), selectSlice(a.class, rs.UID), &r)
	// ours holds the resourceVersion of each object of the slice's found.
	ours := map[Ref]string{}
	for i := range listed {
		m := &listed[i]
		if notOurs(a.class, rs.UID, m) != "" {
			continue // claimed by another controller since: neither ours to apply nor to prune
		}
		ours[refOf(m)] = m.ResourceVersion
		if !wanted[refOf(m)] {
			p.stale = append(p.stale, *m)
		}
	}

	// 3. An object no list found is new, or someone else's: get it.
	apply := p.apply[:0]
	for _, d := range p.apply {
		d.seen, d.exists = ours[d.ref]
		if !d.exists {
			m, found, err := a.get(ctx, d.ref)
			if err != nil {
				r.fail(d.ref, fmt.Errorf("reading: %w", err))
				continue
			}
			if found {
				if why := notOurs(a.class, rs.UID, m); why != "" {
					r.fail(d.ref, fmt.Errorf("%w: %s", ErrNotOurs, why))
					continue
				}
				d.exists, d.seen = true, m.ResourceVersion // ours, not yet in the lists (a cache lags)
			}
		}
		apply = append(apply, d)
	}
	p.apply = apply
	p.failed = r.Failed
	return p, nil
}

// desire checks obj and returns it as it is applied for rs. On an error the
// returned ref names obj as far as it is known.
func (a *Applier) desire(rs *authv1beta1.ResourceSlice, sliceLabels map[string]string, obj client.Object) (desired, error) {
	if isNil(obj) {
		return desired{}, fmt.Errorf("%w: nil object", ErrInvalid)
	}
	d := desired{ref: Ref{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	gvk, err := a.kindOf(obj)
	if err != nil {
		return d, err
	}
	d.ref.GVK = gvk
	if d.ref.Name == "" {
		return d, fmt.Errorf("%w: no name (generateName is not supported: the name is how the next reconcile finds the object)", ErrInvalid)
	}
	namespaced, err := apiutil.IsGVKNamespaced(gvk, a.client.RESTMapper())
	if err != nil {
		return d, fmt.Errorf("finding the scope of its kind: %w", err)
	}
	switch {
	case namespaced && d.ref.Namespace == "":
		return d, fmt.Errorf("%w: its kind is namespaced and it has no namespace (set one, e.g. the slice's, %q)", ErrInvalid, rs.Namespace)
	case !namespaced && d.ref.Namespace != "":
		return d, fmt.Errorf("%w: its kind is cluster-scoped and it has namespace %q (leave it empty)", ErrInvalid, d.ref.Namespace)
	}
	for k, v := range sliceLabels {
		if got, ok := obj.GetLabels()[k]; ok && got != v {
			return d, fmt.Errorf("%w: it is labelled %s=%q, but it is applied for %s=%q", ErrInvalid, k, got, k, v)
		}
	}
	if c := metav1.GetControllerOfNoCopy(obj); c != nil && c.UID != rs.UID {
		return d, fmt.Errorf("%w: it names %s %s as its controller (the slice controls what the SDK applies; drop that reference)", ErrInvalid, c.Kind, c.Name)
	}

	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj.DeepCopyObject())
	if err != nil {
		return d, fmt.Errorf("%w: converting it: %w", ErrInvalid, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	// What the API server sets is never applied: a resourceVersion would be
	// a precondition, a status is the object's own controller's.
	delete(u.Object, "status")
	for _, f := range []string{"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
		"generateName", "generation", "managedFields", "resourceVersion", "selfLink", "uid"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, sliceLabels)
	u.SetLabels(labels)
	if d.ref.Namespace == rs.Namespace {
		refs := []metav1.OwnerReference{sliceOwnerReference(rs)}
		for _, o := range u.GetOwnerReferences() {
			if o.UID != rs.UID {
				refs = append(refs, o)
			}
		}
		u.SetOwnerReferences(refs)
	}
	d.obj = u
	return d, nil
}

// sliceOwnerReference makes rs the controller of an object in its
// namespace. blockOwnerDeletion is false: true would need update on
// resourceslices/finalizers, and a slice's deletion never waits for its
// owned objects.
func sliceOwnerReference(rs *authv1beta1.ResourceSlice) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         authv1beta1.GroupVersion.String(),
		Kind:               authv1beta1.ResourceSliceKind,
		Name:               rs.Name,
		UID:                rs.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(false),
	}
}

// get reads the object ref names, in metadata-only form.
func (a *Applier) get(ctx context.Context, ref Ref) (*metav1.PartialObjectMetadata, bool, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(ref.GVK)
	err := a.reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, m)
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return m, true, nil
}
