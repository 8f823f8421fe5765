package main

import (
	"context"
	"fmt"
	"io"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/gpupool"
	"github.com/sliceclass/sliceclass/examples/pool"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// carol is a third consumer, with an active Tenant.
const carol = "carol"

// pools are the classes of the demo's second part: gpu over a node pool
// with a limit of 2 GPUs per consumer, and burst over a budget of 4 CPU
// admitting waiting slices in fair order.
type pools struct {
	gpu   *budget.Budget
	burst *budget.Budget
}

// addPools serves the classes gpu and burst on mgr, before it starts.
func addPools(mgr manager.Manager, leases resourceslice.Option) (*pools, error) {
	gpu, err := budget.NewNodePool(mgr, "gpu", labels.SelectorFromSet(labels.Set{"pool": "gpu"}),
		budget.WithResources(gpupool.GPU),
		budget.WithConsumerLimit(corev1.ResourceList{gpupool.GPU: resource.MustParse("2")}))
	if err != nil {
		return nil, err
	}
	if err := resourceslice.AddToManager(mgr, "gpu", gpupool.New(gpu), resourceslice.WithBudget(gpu),
		resourceslice.WithMaxConcurrentReconciles(2), leases); err != nil {
		return nil, err
	}
	burst, err := budget.New("burst", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	if err != nil {
		return nil, err
	}
	p, err := pool.New(burst)
	if err != nil {
		return nil, err
	}
	if err := resourceslice.AddToManager(mgr, "burst", p, p.Option(), resourceslice.WithMaxConcurrentReconciles(2), leases); err != nil {
		return nil, err
	}
	return &pools{gpu: gpu, burst: burst}, nil
}

// sliceFunc builds a slice of consumer in its tenant namespace.
type sliceFunc func(consumer, name, class string, req map[corev1.ResourceName]string) *authv1beta1.ResourceSlice

// tour plays the second part: a GPU node added at run time raises the
// pool, a consumer is stopped at its limit while another is admitted, and
// one consumer's burst does not starve another's single slice.
func (p *pools) tour(ctx context.Context, c client.Client, say func(string, ...any), out io.Writer, slice sliceFunc) error {
	gpus := func() string { q := p.gpu.Total()[gpupool.GPU]; return q.String() }
	if err := waitTotal(ctx, p.gpu, "2"); err != nil {
		return err
	}
	before := gpus()
	say("a GPU node joins the cluster at run time (4 GPUs, labelled pool=gpu)")
	if err := createGPUNode(ctx, c, "gpu-2", "4"); err != nil {
		return err
	}
	if err := waitTotal(ctx, p.gpu, "6"); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "\nGPU node added: pool gpu total %s: %s → %s\n", gpupool.GPU, before, gpus())

	say("alice asks for 3 slices of 1 GPU (her limit is 2), carol for 1")
	var decided []*authv1beta1.ResourceSlice
	for _, s := range []*authv1beta1.ResourceSlice{
		slice(alice, "gpu-alice-1", "gpu", map[corev1.ResourceName]string{gpupool.GPU: "1"}),
		slice(alice, "gpu-alice-2", "gpu", map[corev1.ResourceName]string{gpupool.GPU: "1"}),
		slice(alice, "gpu-alice-3", "gpu", map[corev1.ResourceName]string{gpupool.GPU: "1"}),
		slice(carol, "gpu-carol-1", "gpu", map[corev1.ResourceName]string{gpupool.GPU: "1"}),
	} {
		if err := slicetest.CreateAsLiqo(ctx, c, s); err != nil {
			return err
		}
		decided = append(decided, s)
	}
	rows, err := decide(ctx, c, decided)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(out)
	printTable(out, rows)

	say("burst: alice holds the whole budget of 4 CPU, then asks for 6 slices of 1 CPU; carol asks for 1 last")
	hold := slice(alice, "burst-hold", "burst", map[corev1.ResourceName]string{corev1.ResourceCPU: "4"})
	if err := slicetest.CreateAsLiqo(ctx, c, hold); err != nil {
		return err
	}
	if err := waitFor(ctx, c, hold, authv1beta1.ResourceSliceConditionAccepted); err != nil {
		return fmt.Errorf("burst-hold: %w", err)
	}
	var waiting []*authv1beta1.ResourceSlice
	for i := range 6 {
		s := slice(alice, fmt.Sprintf("burst-alice-%d", i+1), "burst", map[corev1.ResourceName]string{corev1.ResourceCPU: "1"})
		if err := slicetest.CreateAsLiqo(ctx, c, s); err != nil {
			return err
		}
		waiting = append(waiting, s)
	}
	single := slice(carol, "burst-carol-1", "burst", map[corev1.ResourceName]string{corev1.ResourceCPU: "1"})
	if err := slicetest.CreateAsLiqo(ctx, c, single); err != nil {
		return err
	}
	waiting = append(waiting, single)
	if _, err := decide(ctx, c, waiting); err != nil {
		return err
	}
	say("alice deletes burst-hold: 4 CPU free for 7 waiting slices")
	if err := c.Delete(ctx, hold); err != nil {
		return err
	}
	if err := waitFor(ctx, c, single, authv1beta1.ResourceSliceConditionAccepted); err != nil {
		return fmt.Errorf("carol's single slice after the burst: %w", err)
	}
	// The 3 CPU left go to alice's burst, oldest first.
	admitted, err := waitAccepted(ctx, c, waiting[:6], 3)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "\nburst: carol's single slice Accepted (fair order); alice's burst: %d of 6 Accepted, the rest wait\n", admitted)
	return nil
}

// decide waits for each slice's decision and returns their rows.
func decide(ctx context.Context, c client.Reader, slices []*authv1beta1.ResourceSlice) ([]row, error) {
	rows := make([]row, 0, len(slices))
	for _, s := range slices {
		got, err := waitDecided(ctx, c, s)
		if err != nil {
			return nil, err
		}
		rows = append(rows, toRow(got, ""))
	}
	return rows, nil
}

// waitTotal waits until the pool's GPU total is want.
func waitTotal(ctx context.Context, b *budget.Budget, want string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w := resource.MustParse(want)
	for {
		if q := b.Total()[gpupool.GPU]; q.Cmp(w) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pool %s to hold %s GPUs: %w", b.Name(), want, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createGPUNode creates a Ready node labelled pool=gpu with gpus GPUs,
// writing its status as a kubelet does.
func createGPUNode(ctx context.Context, c client.Client, name, gpus string) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "gpu"}}}
	if err := c.Create(ctx, n); err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	alloc := corev1.ResourceList{gpupool.GPU: resource.MustParse(gpus), corev1.ResourceCPU: resource.MustParse("32")}
	n.Status = corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
	if err := c.Status().Update(ctx, n); err != nil {
		return fmt.Errorf("writing node %s's status: %w", name, err)
	}
	return nil
}

// waitAccepted waits until want of slices are Accepted and returns how
// many are.
func waitAccepted(ctx context.Context, c client.Reader, slices []*authv1beta1.ResourceSlice, want int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		n := 0
		for _, s := range slices {
			var got authv1beta1.ResourceSlice
			if err := c.Get(ctx, key(s), &got); err == nil && conditions.IsAccepted(&got) {
				n++
			}
		}
		if n >= want {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("waiting for %d of %d slices to be Accepted (%d are): %w", want, len(slices), n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
