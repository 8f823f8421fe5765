package budget

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
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
	const clientgo = "clientgoscheme.AddToScheme(scheme)"
	var needs []sdkscheme.Need
	if k.sliceBudgets {
		needs = append(needs, sdkscheme.Need{GVK: v1alpha1.GroupVersion.WithKind("SliceBudget"), Call: "v1alpha1.AddToScheme(scheme)"})
	}
	if k.nodes {
		needs = append(needs, sdkscheme.Need{GVK: corev1.SchemeGroupVersion.WithKind("Node"), Call: clientgo})
	}
	if k.pods {
		needs = append(needs, sdkscheme.Need{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Call: clientgo})
	}
	return sdkscheme.Check(s, needs...)
}
