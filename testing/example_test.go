package slicetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// policy grants up to 8 CPUs and denies the rest.
var policy = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if rs.Spec.Resources.Cpu().Value() > 8 {
		conditions.Deny(rs, "TooLarge", "at most 8 CPUs per slice")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
})

func TestPolicy(t *testing.T) {
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "16"))
	res := slicetest.New(t, "gold", policy, slicetest.WithObjects(slice)).Reconcile(slice)
	require.NoError(t, res.Err)
	assert.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Decision)
	assert.Equal(t, "TooLarge", res.Reason)
	assert.Len(t, res.Writes, 1)
}

// A Harness seeded with a slice reconciles it with the real reconciler on a
// fake API and says what happened. In a test, pass your *testing.T.
func ExampleHarness_Reconcile() {
	t := &testing.T{}
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))
	res := slicetest.New(t, "gold", policy, slicetest.WithObjects(slice)).Reconcile(slice)
	fmt.Println(res.Decision, res.Reason, len(res.Writes), res.Events[0].Type)
	// Output: Accepted Granted 1 Normal
}

// A Harness runs several steps: here a conflict on the first status write is
// retried quietly (the refused write is recorded with its error), and a
// decided slice costs no write.
func ExampleNew() {
	t := &testing.T{}
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "4"))
	h := slicetest.New(t, "gold", policy, slicetest.WithObjects(slice), slicetest.WithStatusWriteErrors(slicetest.Conflict()))

	first := h.Reconcile(slice)
	fmt.Println(first.Decision == "", first.Err, first.Result.RequeueAfter > 0)
	fmt.Println(len(first.Writes), apierrors.IsConflict(first.Writes[0].Err))
	second := h.Reconcile(slice)
	fmt.Println(second.Decision, len(second.Writes))
	third := h.Reconcile(slice)
	fmt.Println(third.Decision, len(third.Writes))
	// Output:
	// true <nil> true
	// 1 true
	// Accepted 1
	// Accepted 0
}

// serveGold stands for your test's setup: a manager on the control plane
// serving class gold with policy, stopped when the test ends.
func serveGold(t *testing.T, cp *controlplane.ControlPlane) {
	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, "gold", policy)
	})
}

// On a real API server (envtest), CreateAsLiqo leaves a slice as Liqo does
// on the provider, and WaitForDecision waits for the class controller's
// answer. Examples that need envtest binaries have no checked output.
func ExampleCreateAsLiqo() {
	t := &testing.T{} // in a test, your *testing.T
	cp := controlplane.Start(t)
	require.NoError(t, cp.CreateNamespace(context.Background(), slicetest.DefaultNamespace))
	serveGold(t, cp)

	ctx, cancel := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancel()
	slice := slicetest.NewSlice("s1", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "16"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, slice))

	got, err := slicetest.WaitForDecision(ctx, cp.Client, client.ObjectKeyFromObject(slice))
	require.NoError(t, err)
	fmt.Println(conditions.Get(got, authv1beta1.ResourceSliceConditionTypeResources).Reason) // TooLarge
}

// A test that expects no decision bounds its wait with the context: a slice
// of a class nobody serves is still undecided when the context ends.
func ExampleWaitForDecision() {
	t := &testing.T{} // in a test, your *testing.T
	cp := controlplane.Start(t)
	require.NoError(t, cp.CreateNamespace(context.Background(), slicetest.DefaultNamespace))
	serveGold(t, cp) // serves gold only

	slice := slicetest.NewSlice("s2", slicetest.WithClass("bronze"), slicetest.WithRequest("cpu", "2"))
	require.NoError(t, slicetest.CreateAsLiqo(context.Background(), cp.Client, slice))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, err := slicetest.WaitForDecision(ctx, cp.Client, client.ObjectKeyFromObject(slice))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	fmt.Println(conditions.IsDecided(got)) // false: got is the slice as last read
}

// A slice Liqo has not authenticated yet gets no decision; Authenticate
// plays Liqo's acceptance, and the class controller then decides.
func ExampleAuthenticate() {
	t := &testing.T{} // in a test, your *testing.T
	cp := controlplane.Start(t)
	require.NoError(t, cp.CreateNamespace(context.Background(), slicetest.DefaultNamespace))
	serveGold(t, cp)

	ctx := context.Background()
	slice := slicetest.NewSlice("s3", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "2"), slicetest.Unauthenticated())
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, slice))
	key := client.ObjectKeyFromObject(slice)

	early, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := slicetest.WaitForDecision(early, cp.Client, key)
	require.ErrorIs(t, err, context.DeadlineExceeded, "decided before Liqo authenticated it")

	require.NoError(t, slicetest.Authenticate(ctx, cp.Client, key))
	late, cancel := context.WithTimeout(ctx, envkit.WaitTimeout)
	defer cancel()
	got, err := slicetest.WaitForDecision(late, cp.Client, key)
	require.NoError(t, err)
	fmt.Println(conditions.IsAccepted(got)) // true
}
