// Package sdkscheme holds the one list of the API types the SDK reads and
// writes through a manager's client and cache, for
// the SDK's own tests and for the test kits' managers (which cannot
// import resourceslice: its own tests import them).
package sdkscheme

import (
	"fmt"
	"slices"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// Add adds to s Liqo's authentication.liqo.io/v1beta1, Liqo's
// offloading.liqo.io/v1beta1 Quota (only it), coordination.k8s.io/v1 and
// sliceclass.io/v1alpha1. Adding them twice is harmless.
func Add(s *runtime.Scheme) error {
	if err := authv1beta1.AddToScheme(s); err != nil {
		return err
	}
	// Liqo's Quota only: the SDK reads ShadowPods through a cache of its
	// own, and nothing else of the group.
	gv := offloadingv1beta1.SchemeGroupVersion
	s.AddKnownTypes(gv, &offloadingv1beta1.Quota{}, &offloadingv1beta1.QuotaList{})
	metav1.AddToGroupVersion(s, gv)
	if err := coordinationv1.AddToScheme(s); err != nil {
		return err
	}
	return v1alpha1.AddToScheme(s)
}

// Need is one kind a registration reads or writes, and the call that adds
// it to a scheme.
type Need struct {
	GVK  schema.GroupVersionKind
	Call string
}

// Check returns nil when s recognizes every kind of needs, else an error
// naming each kind it lacks and, once each, the calls that add them. It
// never changes s: the scheme is the user's.
func Check(s *runtime.Scheme, needs ...Need) error {
	var missing, calls []string
	for _, n := range needs {
		if s.Recognizes(n.GVK) {
			continue
		}
		missing = append(missing, n.GVK.GroupVersion().String()+" "+n.GVK.Kind)
		if !slices.Contains(calls, n.Call) {
			calls = append(calls, n.Call)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the manager's scheme lacks %s: call %s before building the manager",
		strings.Join(missing, ", "), strings.Join(calls, " and "))
}
