package owned

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels every owned object carries. Their values are always valid
// label values: a class name is checked by New, a namespace (a DNS label)
// and a UID (36 characters) always fit, and a slice name longer than 63
// characters is shortened by sliceNameLabel.
const (
	// LabelClass holds the class whose controller applied the object.
	LabelClass = "sliceclass.io/class"
	// LabelSliceNamespace holds the namespace of the owning slice.
	LabelSliceNamespace = "sliceclass.io/slice-namespace"
	// LabelSliceName holds the name of the owning slice (see sliceNameLabel).
	LabelSliceName = "sliceclass.io/slice-name"
	// LabelSliceUID holds the UID of the owning slice: the key prune,
	// Remove and Sweep select by, since a slice deleted and created again
	// under the same name is another slice.
	LabelSliceUID = "sliceclass.io/slice-uid"
)

// sliceNameLabel is the value of LabelSliceName: the name itself when it
// fits in a label value (63 characters), else its first 52 characters, a
// dash and 10 hex digits of its SHA-256, so that a long name still selects
// its slice's objects.
func sliceNameLabel(name string) string {
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:52] + "-" + hex.EncodeToString(sum[:])[:10]
}

// sliceLabels are the labels an object owned for rs carries. It fails on a
// slice whose namespace, name or UID cannot be a label value (an API server
// accepts no such slice).
func sliceLabels(class string, rs *authv1beta1.ResourceSlice) (map[string]string, error) {
	l := map[string]string{
		LabelClass:          class,
		LabelSliceNamespace: rs.Namespace,
		LabelSliceName:      sliceNameLabel(rs.Name),
		LabelSliceUID:       string(rs.UID),
	}
	for k, v := range l {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("slice %s/%s: %s=%q is not a label value: %v", rs.Namespace, rs.Name, k, v, errs)
		}
	}
	return l, nil
}

// selectSlice selects the class's objects of the slice with that UID.
func selectSlice(class string, uid types.UID) labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelClass: class, LabelSliceUID: string(uid)})
}

// selectSliceName selects the class's objects of every slice that had that
// namespace and name.
func selectSliceName(class string, key types.NamespacedName) labels.Selector {
	return labels.SelectorFromSet(labels.Set{
		LabelClass: class, LabelSliceNamespace: key.Namespace, LabelSliceName: sliceNameLabel(key.Name),
	})
}

// selectClass selects the class's objects of any slice. class must be a
// valid label value.
func selectClass(class string) labels.Selector {
	sel, err := labels.Parse(LabelClass + "=" + class + "," + LabelSliceUID)
	if err != nil {
		panic(fmt.Sprintf("selecting class %q: %v", class, err)) // New checked the class
	}
	return sel
}

// notOurs says why an existing object is not the class's object for the
// slice with that UID, or "" when it is: it was applied by this class for
// this slice and no other controller claims it. One rule for the objects a
// list found and those a get found.
func notOurs(class string, uid types.UID, m *metav1.PartialObjectMetadata) string {
	l := m.GetLabels()
	switch {
	case l[LabelClass] == "":
		return "it has no " + LabelClass + " label (made by someone else)"
	case l[LabelClass] != class:
		return fmt.Sprintf("it belongs to class %q", l[LabelClass])
	case l[LabelSliceUID] != string(uid):
		return fmt.Sprintf("it belongs to slice %s/%s (uid %s)", l[LabelSliceNamespace], l[LabelSliceName], l[LabelSliceUID])
	}
	if c := metav1.GetControllerOfNoCopy(m); c != nil && c.UID != uid {
		return fmt.Sprintf("it is controlled by %s %s", c.Kind, c.Name)
	}
	return ""
}
