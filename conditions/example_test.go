package conditions_test

import (
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/sliceclass/sliceclass/conditions"
)

func ExampleAccept() {
	rs := &authv1beta1.ResourceSlice{}
	fmt.Println(conditions.Accept(rs, "Granted", "all requested resources granted"))
	fmt.Println(conditions.Accept(rs, "Granted", "all requested resources granted")) // nothing changes
	fmt.Println(conditions.IsAccepted(rs))
	// Output:
	// true
	// false
	// true
}

func ExampleDeny() {
	rs := &authv1beta1.ResourceSlice{}
	conditions.Deny(rs, "PoolExhausted", "2 cpu left")
	c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
	fmt.Println(c.Status, c.Reason, c.Message)
	// Output: Denied PoolExhausted 2 cpu left
}

func ExampleGet() {
	var rs *authv1beta1.ResourceSlice // nil-safe
	fmt.Println(conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeAuthentication) == nil, conditions.IsAuthenticated(rs))
	// Output: true false
}
