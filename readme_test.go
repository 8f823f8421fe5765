package sliceclass_test

// The Go snippets of README.md and docs/*.md, verbatim, so that they
// compile and run; TestDocSnippetsCompile (docs_test.go) fails when a
// snippet is neither here nor in docs_test.go.

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

func setup(mgr ctrl.Manager) error {
	gold := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		if len(rs.Spec.Resources) == 0 {
			conditions.Deny(rs, "NoResourcesRequested", "the slice requests nothing")
			return ctrl.Result{}, nil // a "no" is a decision, not an error
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		rs.Status.NodeLabels = map[string]string{"tier": "gold"}
		conditions.Accept(rs, "Granted", "all requested resources granted")
		return ctrl.Result{}, nil
	})
	return resourceslice.AddToManager(mgr, "gold", gold,
		resourceslice.WithMaxConcurrentReconciles(4))
}

func setupGPU(mgr ctrl.Manager, set *resourceslice.ClassSet, policy handler.Handler) error {
	gpus, err := budget.NewNodePool(mgr, "gpu", labels.SelectorFromSet(labels.Set{"pool": "gpu"}),
		budget.WithResources("nvidia.com/gpu", corev1.ResourceCPU, corev1.ResourceMemory),
		budget.WithReserve(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}),
		budget.WithConsumerLimit(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}))
	if err != nil {
		return err
	}
	provider, err := budget.New("provider", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("256")})
	if err != nil {
		return err
	}
	// An offer is admitted only if it fits both budgets, at once.
	return set.Serve("gpu", policy, resourceslice.WithBudget(gpus), resourceslice.WithBudget(provider))
}

func setupBudget(set *resourceslice.ClassSet, grant handler.Handler) error {
	// gold and silver together get at most 64 CPU and 256Gi.
	shared, err := budget.New("premium", corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
	})
	if err != nil {
		return err
	}
	for _, class := range []string{"gold", "silver"} {
		if err := set.Serve(class, grant,
			resourceslice.WithBudget(shared), resourceslice.WithMaxConcurrentReconciles(8)); err != nil {
			return err
		}
	}
	return nil
}

func run() error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))    // Kubernetes' types: node pools read Nodes and Pods
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	set, err := resourceslice.NewClassSet(mgr) // many classes, one set
	if err != nil {
		return err
	}
	if err := setupBudget(set, capped); err != nil { // gold and silver, below
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// capped grants at most 8 CPU per slice.
var capped = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	if rs.Spec.Resources.Cpu().Cmp(resource.MustParse("8")) > 0 {
		rs.Status.Resources[corev1.ResourceCPU] = resource.MustParse("8")
		conditions.Accept(rs, "ResourcesCapped", "cpu capped at 8")
		return ctrl.Result{}, nil
	}
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
})

func TestGoldCapsCPU(t *testing.T) {
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "64"))
	res := slicetest.New(t, "gold", capped, slicetest.WithObjects(slice)).Reconcile(slice)

	require.NoError(t, res.Err)
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision)
	assert.Equal(t, "ResourcesCapped", res.Reason)
	assert.True(t, res.Resources.Cpu().Equal(resource.MustParse("8")))
	assert.Len(t, res.Writes, 1) // exactly one status patch
	assert.Len(t, res.Events, 1) // one decision event
}

func TestGoldWithABudget(t *testing.T) {
	b, err := budget.New("gold", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
	require.NoError(t, err)
	held := slicetest.NewSlice("held", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "8"),
		slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Granted"))
	held.Status.Resources = held.Spec.Resources.DeepCopy() // another slice already holds 8 CPU
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))

	h := slicetest.New(t, "gold", capped, slicetest.WithObjects(held, slice),
		slicetest.WithReconcilerOptions(resourceslice.WithBudget(b)))
	res := h.Reconcile(slice)

	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
	assert.Equal(t, budget.ReasonExhausted, res.Reason)
	assert.Equal(t, "budget gold: cpu: asked 4, waits until 4 is free", res.Message)
	free := b.Free()
	assert.True(t, free.Cpu().Equal(resource.MustParse("2")))
}

var _ = setup
var _ = run
var _ = setupBudget
var _ = setupGPU
