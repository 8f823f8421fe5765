package slicetest_test

import (
	"context"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// reserver holds something outside the cluster for each Accepted slice.
type reserver struct{ held map[types.NamespacedName]bool }

func (r *reserver) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	r.held[types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}] = true
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Reserved", "")
	return ctrl.Result{}, nil
}

func (r *reserver) Release(_ context.Context, key types.NamespacedName) error {
	delete(r.held, key)
	return nil
}

func (r *reserver) Holding(context.Context) ([]types.NamespacedName, error) {
	var out []types.NamespacedName
	for k := range r.held {
		out = append(out, k)
	}
	return out, nil
}

// A release hook, an inventory sweep and a WithWatch pass, driven from a
// test: delete a slice and reconcile it to see the release; sweep for
// reservations whose slice vanished while the controller was down; run a
// pass to re-evaluate every slice of the class.
func ExampleHarness_lifecycle() {
	ctx := context.Background()
	h := &reserver{held: map[types.NamespacedName]bool{}}
	a := slicetest.NewSlice("a", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "1"))
	hs := slicetest.New(&testing.T{}, "gold", h, slicetest.WithObjects(a))

	hs.Reconcile(a)
	fmt.Println("after deciding a:", len(h.held))
	_ = hs.Client.Delete(ctx, a)
	hs.Reconcile(a)
	fmt.Println("after deleting a:", len(h.held))

	// A reservation left over from before a restart: the sweep finds it.
	h.held[types.NamespacedName{Namespace: a.Namespace, Name: "gone"}] = true
	swept := hs.SweepInventory()
	fmt.Println("swept:", len(swept), "after the sweep:", len(h.held))

	b := slicetest.NewSlice("b", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "1"))
	_ = hs.Client.Create(ctx, b)
	for _, res := range hs.Reevaluate() {
		fmt.Println("a pass re-evaluates:", res.Slice.Name, res.Decision)
	}
	// Output:
	// after deciding a: 1
	// after deleting a: 0
	// swept: 1 after the sweep: 0
	// a pass re-evaluates: b Accepted
}
