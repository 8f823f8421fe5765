package budget

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// The scheme is the user's: a budget reads it and never writes it (a
// manager's caches read it from the moment it starts). What a budget reads
// is checked when it is built, and a missing type is an error naming the
// call that adds it.

// schemeKinds are the kinds a budget reads: SliceBudgets (FromObject), a
// node pool's Nodes and, with local pods, Pods.
type schemeKinds struct {
	sliceBudgets, nodes, pods bool
}

// check returns an error naming every kind s lacks, with the call to add.
func (k schemeKinds) check(s *runtime.Scheme) error {
	type want struct {
		gvk  schema.GroupVersionKind
		call string
	}
	var wants []want
	if k.sliceBudgets {
		wants = append(wants, want{v1alpha1.GroupVersion.WithKind("SliceBudget"), "resourceslice.AddToScheme(scheme)"})
	}
	if k.nodes {
		wants = append(wants, want{corev1.SchemeGroupVersion.WithKind("Node"), "clientgoscheme.AddToScheme(scheme)"})
	}
	if k.pods {
		wants = append(wants, want{corev1.SchemeGroupVersion.WithKind("Pod"), "clientgoscheme.AddToScheme(scheme)"})
	}
	var missing, calls []string
	for _, w := range wants {
		if s.Recognizes(w.gvk) {
			continue
		}
		missing = append(missing, w.gvk.GroupVersion().String()+" "+w.gvk.Kind)
		if len(calls) == 0 || calls[len(calls)-1] != w.call {
			calls = append(calls, w.call)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the manager's scheme lacks %s: call %s before building the manager",
		strings.Join(missing, ", "), strings.Join(calls, " and "))
}
