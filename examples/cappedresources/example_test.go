package cappedresources_test

import (
	"fmt"
	"testing"

	"github.com/sliceclass/sliceclass/examples/cappedresources"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

func ExamplePolicy() {
	caps, _ := cappedresources.ParseCaps("cpu=4,memory=8Gi")
	policy, _ := cappedresources.New(caps)

	slice := slicetest.NewSlice("big", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "16"))
	res := slicetest.New(&testing.T{}, "gold", policy, slicetest.WithObjects(slice)).Reconcile(slice)
	cpu := res.Resources["cpu"]
	fmt.Println(res.Decision, res.Reason, cpu.String(), len(res.Writes))
	// Output: Accepted ResourcesCapped 4 1
}

// A resource without a cap is not offered: the class grants what it caps,
// and the message names what it dropped.
func ExamplePolicy_notOffered() {
	caps, _ := cappedresources.ParseCaps("cpu=4,memory=8Gi")
	policy, _ := cappedresources.New(caps)

	slice := slicetest.NewSlice("gpus", slicetest.WithClass("gold"),
		slicetest.WithRequest("cpu", "2"), slicetest.WithRequest("nvidia.com/gpu", "100"))
	res := slicetest.New(&testing.T{}, "gold", policy, slicetest.WithObjects(slice)).Reconcile(slice)
	fmt.Println(res.Decision, res.Reason, len(res.Resources), res.Message)

	only := slicetest.NewSlice("only-gpus", slicetest.WithClass("gold"), slicetest.WithRequest("nvidia.com/gpu", "1"))
	res = slicetest.New(&testing.T{}, "gold", policy, slicetest.WithObjects(only)).Reconcile(only)
	fmt.Println(res.Decision, res.Reason, res.Message)
	// Output:
	// Accepted ResourcesCapped 1 not offered: nvidia.com/gpu
	// Denied ResourcesNotOffered not offered: nvidia.com/gpu
}
