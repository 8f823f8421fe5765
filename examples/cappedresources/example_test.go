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
	res := slicetest.Run(&testing.T{}, "gold", policy, slice)
	cpu := res.Resources["cpu"]
	fmt.Println(res.Decision, res.Reason, cpu.String(), len(res.Writes))
	// Output: Accepted ResourcesCapped 4 1
}
