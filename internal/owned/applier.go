package owned

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Applier applies, prunes and deletes the owned objects of one class's
// slices. It is safe for concurrent use by several workers; two calls for
// the same slice must not run at once (a workqueue never does that).
//
// Reads (the lists that find what to prune or sweep, and a get for an
// object of the set that no list found) go through the reader given to New,
// in metadata-only form; writes go through the client. With the manager's
// cache as the reader, each owned type gets a cluster-wide metadata
// informer on first use and the ServiceAccount needs watch on it too; with
// the API reader every call lists each known type once.
type Applier struct {
	client  client.Client
	reader  client.Reader
	scheme  *runtime.Scheme
	class   string
	manager string
	// swept selects every object of the class, of any slice.
	swept labels.Selector

	mu sync.Mutex
	// types are the kinds listed to prune, remove and sweep: those given by
	// WithTypes and every kind applied since.
	types map[schema.GroupVersionKind]struct{}

	// memory is what the Applier applied for each slice, so that an
	// unchanged object is not applied again.
	memory *memory
}

// Option configures an Applier.
type Option func(*Applier) error

// WithTypes names the kinds (by a zero object of each, e.g.
// &corev1.ConfigMap{}) the class may own, so that Remove and Sweep find
// them after a restart, before any slice's set has been applied again. A
// kind applied later is listed from then on without being named here.
func WithTypes(objs ...client.Object) Option {
	return func(a *Applier) error {
		for _, o := range objs {
			if isNil(o) {
				return errors.New("WithTypes: nil object")
			}
			gvk, err := a.kindOf(o)
			if err != nil {
				return fmt.Errorf("WithTypes: %w", err)
			}
			a.types[gvk] = struct{}{}
		}
		return nil
	}
}

// New returns the Applier of class. c writes (server-side apply under the
// field manager "sliceclass-<class>", deletes) and maps kinds to their scope
// with its RESTMapper; reader lists and gets in metadata-only form (the
// manager's cache, or its API reader); scheme maps Go types to kinds.
func New(c client.Client, reader client.Reader, scheme *runtime.Scheme, class string, opts ...Option) (*Applier, error) {
	switch {
	case c == nil:
		return nil, errors.New("owned: nil client")
	case reader == nil:
		return nil, errors.New("owned: nil reader")
	case scheme == nil:
		return nil, errors.New("owned: nil scheme")
	}
	if errs := validation.IsValidLabelValue(class); class == "" || len(errs) > 0 {
		return nil, fmt.Errorf("owned: class %q is not a non-empty label value: %v", class, errs)
	}
	a := &Applier{
		client: c, reader: reader, scheme: scheme, class: class, manager: fieldManager(class), swept: selectClass(class),
		types: map[schema.GroupVersionKind]struct{}{}, memory: newMemory(),
	}
	for _, opt := range opts {
		if err := opt(a); err != nil {
			return nil, fmt.Errorf("owned: class %q: %w", class, err)
		}
	}
	return a, nil
}

// fieldManager is the server-side apply field manager of class's owned
// objects.
func fieldManager(class string) string { return "sliceclass-" + class }

// kindOf maps obj, not nil, to its kind through the scheme.
func (a *Applier) kindOf(obj client.Object) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(obj, a.scheme)
	switch {
	case runtime.IsNotRegisteredError(err):
		return gvk, fmt.Errorf("%w: Go type %T is not in the scheme (register its group with AddToScheme)", ErrInvalid, obj)
	case err != nil:
		return gvk, fmt.Errorf("%w: the kind of Go type %T: %w", ErrInvalid, obj, err)
	}
	return gvk, nil
}

// isNil reports whether obj is nil, or a nil pointer in an interface.
func isNil(obj client.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// learn adds kinds to those listed, and returns all of them, sorted.
func (a *Applier) learn(kinds ...schema.GroupVersionKind) []schema.GroupVersionKind {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, gvk := range kinds {
		a.types[gvk] = struct{}{}
	}
	return slices.SortedFunc(maps.Keys(a.types), func(x, y schema.GroupVersionKind) int {
		return compareRefs(Ref{GVK: x}, Ref{GVK: y})
	})
}

// list returns the objects of every known kind that sel selects, across
// namespaces, in metadata-only form with their kind set. A kind the API
// server does not serve (its CRD is gone) has no objects; a failed list is a
// failure of that kind.
func (a *Applier) list(ctx context.Context, kinds []schema.GroupVersionKind, sel labels.Selector, r *Report) []metav1.PartialObjectMetadata {
	var found []metav1.PartialObjectMetadata
	for _, gvk := range kinds {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := a.reader.List(ctx, l, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			r.fail(Ref{GVK: gvk}, fmt.Errorf("listing objects labelled %s: %w", sel, err))
			continue
		}
		for i := range l.Items {
			l.Items[i].SetGroupVersionKind(gvk)
			found = append(found, l.Items[i])
		}
	}
	return found
}

// remove deletes objs, each only if it is still the object listed (a UID
// precondition), and returns those deleted, sorted; failures go to r. An
// object already gone, already deleting, or replaced by another of the same
// name is skipped.
func (a *Applier) remove(ctx context.Context, objs []metav1.PartialObjectMetadata, r *Report) []Ref {
	var deleted []Ref
	for i := range objs {
		m := &objs[i]
		if m.DeletionTimestamp != nil {
			continue
		}
		ref := refOf(m)
		uid := m.UID
		err := a.client.Delete(ctx, m, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case err == nil:
			deleted = append(deleted, ref)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone already, or a new object under the name: not this one.
		default:
			r.fail(ref, fmt.Errorf("deleting: %w", err))
		}
	}
	return sortRefs(deleted)
}

func refOf(m *metav1.PartialObjectMetadata) Ref {
	return Ref{GVK: m.GroupVersionKind(), Namespace: m.Namespace, Name: m.Name}
}
