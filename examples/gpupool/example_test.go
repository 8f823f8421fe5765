package gpupool_test

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/gpupool"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// A GPU class over the nodes labelled pool=gpu: the pool's total follows
// those nodes (their allocatable GPUs, cpu and memory), no consumer holds
// more than 2 GPUs of it, and each offer is pinned to the pool's nodes.
// The manager's client needs list and watch on nodes.
func ExampleNew() {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))    // a node pool reads Nodes and Pods
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	pool, err := budget.NewNodePool(mgr, "gpu", labels.SelectorFromSet(labels.Set{"pool": "gpu"}),
		budget.WithResources(gpupool.GPU, corev1.ResourceCPU, corev1.ResourceMemory),
		budget.WithConsumerLimit(corev1.ResourceList{gpupool.GPU: resource.MustParse("2")}))
	if err != nil {
		panic(err)
	}
	if err := resourceslice.AddToManager(mgr, "gpu", gpupool.New(pool), resourceslice.WithBudget(pool)); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
