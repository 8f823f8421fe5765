package owned

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrNotOurs is wrapped by the failure of an object that already exists but
// was not applied by this class for this slice: it has no
// sliceclass.io/class label, another class's or another slice's, or another
// controller. Such an object is left untouched; the reconciler turns the
// failure into a Warning event on the slice.
var ErrNotOurs = errors.New("exists and is not ours: not taken over")

// ErrInvalid is wrapped by the failure of an object the handler returned
// that can never be applied as it is: nil, of a type missing from the
// scheme, without a name, with a namespace its type's scope contradicts, a
// duplicate in the set, or labelled or controlled for another class or
// slice. Retrying does not help; the handler must change.
var ErrInvalid = errors.New("invalid owned object")

// Ref names one object: its kind and where it is.
type Ref struct {
	GVK       schema.GroupVersionKind
	Namespace string // empty for a cluster-scoped object
	Name      string // empty when a failure concerns a whole type (a list)
}

// String gives "Kind group/version namespace/name", e.g.
// "ConfigMap v1 team-a/grant" or "PriorityClass scheduling.k8s.io/v1 gold".
// An unknown kind (a type missing from the scheme) is left out.
func (r Ref) String() string {
	var parts []string
	if r.GVK.Kind != "" {
		parts = append(parts, r.GVK.Kind, r.GVK.GroupVersion().String())
	}
	switch {
	case r.Name == "":
	case r.Namespace == "":
		parts = append(parts, r.Name)
	default:
		parts = append(parts, r.Namespace+"/"+r.Name)
	}
	return strings.Join(parts, " ")
}

func compareRefs(a, b Ref) int {
	return cmp.Or(
		cmp.Compare(a.GVK.Group, b.GVK.Group), cmp.Compare(a.GVK.Kind, b.GVK.Kind), cmp.Compare(a.GVK.Version, b.GVK.Version),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// Failure is what went wrong with one object (or with listing one type). It
// is an error naming the object, and unwraps to the cause: errors.Is(f,
// ErrNotOurs) tells a refusal from an API error.
type Failure struct {
	Ref Ref
	Err error
}

// Error names the object, then the cause.
func (f Failure) Error() string {
	if ref := f.Ref.String(); ref != "" {
		return ref + ": " + f.Err.Error()
	}
	return f.Err.Error()
}

// Unwrap returns the cause.
func (f Failure) Unwrap() error { return f.Err }

// Report says what a call did (or, from Plan, would do).
type Report struct {
	// Applied lists the objects applied, in the order given.
	Applied []Ref
	// Unchanged lists the objects of the set not applied again, in the
	// order given: the Applier applied the same content before and the
	// object is still as that apply left it (Apply only).
	Unchanged []Ref
	// Pruned lists the objects of the slice deleted because the set no
	// longer holds them (Apply, Plan), sorted.
	Pruned []Ref
	// Deleted lists the objects deleted by Remove or Sweep, sorted.
	Deleted []Ref
	// Failed lists every object that was refused or whose API call failed.
	Failed []Failure
}

// err joins the failures, nil when there are none.
func (r *Report) err() error {
	errs := make([]error, len(r.Failed))
	for i, f := range r.Failed {
		errs[i] = f
	}
	return errors.Join(errs...)
}

func (r *Report) fail(ref Ref, err error) {
	r.Failed = append(r.Failed, Failure{Ref: ref, Err: err})
}

func sortRefs(refs []Ref) []Ref {
	slices.SortFunc(refs, compareRefs)
	return refs
}
