package budget_test

import (
	"context"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// A budget limits exactly the resources it names: memory is not limited by
// a budget over CPU and pods, and a resource a new total omits becomes zero,
// never unlimited.
func ExampleNew() {
	b, err := budget.New("pool", corev1.ResourceList{
		corev1.ResourceCPU:  resource.MustParse("64"),
		corev1.ResourcePods: resource.MustParse("110"),
	})
	if err != nil {
		panic(err)
	}
	show := func() {
		free := b.Free()
		cpu, pods := free[corev1.ResourceCPU], free[corev1.ResourcePods]
		_, memory := free[corev1.ResourceMemory]
		fmt.Printf("cpu %s, pods %s, memory limited: %v\n", cpu.String(), pods.String(), memory)
	}
	show()

	// Resized at run time, e.g. from the nodes' capacity: pods omitted is 0.
	if err := b.SetTotal(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96")}); err != nil {
		panic(err)
	}
	show()

	// A budget over nothing would limit nothing: refused.
	_, err = budget.New("gpu", corev1.ResourceList{})
	fmt.Println(err != nil)
	// Output:
	// cpu 64, pods 110, memory limited: false
	// cpu 96, pods 0, memory limited: false
	// true
}

// Two classes in one manager draw from one budget: gold and silver together
// never hold more than 64 CPU, whatever their handlers offer. setup is what
// a program calls with its manager, before mgr.Start.
func Example_sharedByTwoClasses() {
	setup := func(mgr manager.Manager) error {
		pool, err := budget.New("cpu-pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")})
		if err != nil {
			return err
		}
		// gold gets what it asks for, while the pool lasts.
		gold := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
			rs.Status.Resources = rs.Spec.Resources.DeepCopy()
			conditions.Accept(rs, "Granted", "granted as requested")
			return ctrl.Result{}, nil
		})
		// silver gets at most 8 CPU per slice, from the same pool.
		silverCap := resource.MustParse("8")
		silver := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
			rs.Status.Resources = rs.Spec.Resources.DeepCopy()
			if cpu, ok := rs.Status.Resources[corev1.ResourceCPU]; ok && cpu.Cmp(silverCap) > 0 {
				rs.Status.Resources[corev1.ResourceCPU] = silverCap.DeepCopy()
			}
			conditions.Accept(rs, "Granted", "granted up to 8 CPU")
			return ctrl.Result{}, nil
		})
		// An acceptance that does not fit what the pool has free is written
		// Denied with reason budget.ReasonExhausted (an Accepted slice asking
		// for more keeps what it has), and admitted when capacity frees,
		// fair by consumer (least-holding consumer first, oldest first
		// within one).
		if err := resourceslice.AddToManager(mgr, "gold", gold, resourceslice.WithBudget(pool)); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "silver", silver, resourceslice.WithBudget(pool))
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))    // a node pool reads Nodes and Pods
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	if err := setup(mgr); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// A GPU class sells the GPU nodes: the pool's total follows the nodes
// labelled pool=gpu (Ready, schedulable, not Liqo virtual nodes), keeps one
// GPU back, and no consumer holds more than 2 GPUs from it. The handler pins
// each offer to the pool's nodes in one line.
func ExampleNewNodePool() {
	setup := func(mgr manager.Manager) error {
		gpu := corev1.ResourceName("nvidia.com/gpu")
		pool, err := budget.NewNodePool(mgr, "gpu", labels.SelectorFromSet(labels.Set{"pool": "gpu"}),
			budget.WithResources(gpu, corev1.ResourceCPU, corev1.ResourceMemory),
			budget.WithReserve(corev1.ResourceList{gpu: resource.MustParse("1")}),
			budget.WithConsumerLimit(corev1.ResourceList{gpu: resource.MustParse("2")}))
		if err != nil {
			return err
		}
		policy := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
			rs.Status.Resources = rs.Spec.Resources.DeepCopy()
			if err := pool.PinToNodePool(rs); err != nil {
				return ctrl.Result{}, err
			}
			conditions.Accept(rs, "Granted", "granted on the GPU pool")
			return ctrl.Result{}, nil
		})
		return resourceslice.AddToManager(mgr, "gpu", policy, resourceslice.WithBudget(pool))
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))    // a node pool reads Nodes and Pods
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	if err := setup(mgr); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// A consumer limit and the fair order on a plain budget: no consumer holds
// more than 8 CPU of the 64, and waiting slices are admitted consumer by
// consumer, least-holding first.
func ExampleWithConsumerLimit() {
	b, err := budget.New("premium", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")},
		budget.WithConsumerLimit(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}))
	if err != nil {
		panic(err)
	}
	limit := b.Total()[corev1.ResourceCPU]
	fmt.Println(b.Name(), limit.String())
	_, err = budget.New("premium", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}, budget.WithConsumerLimit(nil))
	fmt.Println(err)
	// Output:
	// premium 64
	// budget "premium": empty consumer limit
}

// spot and gold sell one 64-CPU pool: gold (priority 100) comes first, and
// a gold slice that does not fit shrinks spot's Accepted slices by what it
// lacks (WithPreemption). Running pods outlive a smaller grant, so spot's
// pods that still use more than spot keeps ten minutes after the shrink
// are deleted, the newest first (WithEvictionAfter; the manager needs
// delete on shadowpods.offloading.liqo.io).
func ExampleWithEvictionAfter() {
	var spot, gold handler.Handler // the two classes' policies
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))    // a node pool reads Nodes and Pods
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	pool, err := budget.New("pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")},
		budget.WithPreemption(), budget.WithEvictionAfter(10*time.Minute))
	if err != nil {
		panic(err)
	}
	if err := resourceslice.AddToManager(mgr, "spot", spot, resourceslice.WithBudget(pool)); err != nil {
		panic(err)
	}
	if err := resourceslice.AddToManager(mgr, "gold", gold, resourceslice.WithBudget(pool), resourceslice.WithPriority(100)); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// "globex has held 8 CPU idle for weeks: take it back." A consumer limit of
// zero for globex alone, at run time: its Accepted slices are shrunk to
// nothing (reason Reclaimed) and the capacity frees as its pods end.
func ExampleBudget_SetConsumerLimit() {
	pool, err := budget.New("pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")})
	if err != nil {
		panic(err)
	}
	fmt.Println(pool.SetConsumerLimit("globex", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}))
	fmt.Println(pool.SetConsumerLimit("globex", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}) != nil)
	fmt.Println(pool.SetConsumerLimit("globex", nil)) // the override removed
	// Output:
	// <nil>
	// true
	// <nil>
}

// A budget declared as a SliceBudget: its total, preemption and consumer
// limits are edited with kubectl and take effect within a second, and its
// status shows how full it is (kubectl get sb). setup is what a program
// calls with its manager, before mgr.Start; the SliceBudget is
//
//	apiVersion: sliceclass.io/v1alpha1
//	kind: SliceBudget
//	metadata:
//	  name: gold
//	spec:
//	  total: {cpu: "64", memory: 256Gi}
//	  preemption: {withinBudget: LowerPriority}
//	  consumerLimit: {cpu: "16"}
func ExampleFromObject() {
	setup := func(mgr manager.Manager) error {
		gold, err := budget.FromObject(mgr, "gold")
		if err != nil {
			return err
		}
		grant := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
			rs.Status.Resources = rs.Spec.Resources.DeepCopy()
			conditions.Accept(rs, "Granted", "granted as requested")
			return ctrl.Result{}, nil
		})
		return resourceslice.AddToManager(mgr, "gold", grant, resourceslice.WithBudget(gold))
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))    // a node pool reads Nodes and Pods
	utilruntime.Must(authv1beta1.AddToScheme(scheme))       // Liqo's ResourceSlices and Tenants
	utilruntime.Must(offloadingv1beta1.AddToScheme(scheme)) // Liqo's Quotas, which budgets count
	utilruntime.Must(v1alpha1.AddToScheme(scheme))          // SliceBudgets
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	if err := setup(mgr); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
