package pool_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/pool"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

const class = "shared"

func holding(name, cpu string) *authv1beta1.ResourceSlice {
	s := slicetest.NewSlice(name, slicetest.WithClass(class), slicetest.WithRequest("cpu", cpu), slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, pool.ReasonGranted))
	s.Status.Resources = s.Spec.Resources.DeepCopy()
	return s
}

// newHarness runs the pool over 8 CPU and 16Gi on the harness, with objs
// stored: the budget rebuilds what Accepted slices hold before admitting.
func newHarness(t *testing.T, objs ...client.Object) (*slicetest.Harness, *budget.Budget) {
	t.Helper()
	b, err := budget.New("pool", corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("16Gi")})
	require.NoError(t, err)
	p, err := pool.New(b)
	require.NoError(t, err)
	return slicetest.New(t, class, p, slicetest.WithObjects(objs...), slicetest.WithReconcilerOptions(p.Option())), b
}

func TestPool(t *testing.T) {
	denied := slicetest.NewSlice("denied", slicetest.WithClass(class), slicetest.WithRequest("cpu", "8"), slicetest.Decided(authv1beta1.ResourceSliceConditionDenied, budget.ReasonExhausted))
	otherClass := slicetest.NewSlice("gold", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "8"), slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "x"))
	otherClass.Status.Resources = otherClass.Spec.Resources.DeepCopy()
	cases := map[string]struct {
		reason     string
		others     []client.Object
		request    corev1.ResourceList
		wantStatus authv1beta1.ResourceSliceConditionStatus
		wantReason string
	}{
		"EmptyPool":     {reason: "An empty pool grants a fitting request.", request: cpu("8"), wantStatus: authv1beta1.ResourceSliceConditionAccepted, wantReason: pool.ReasonGranted},
		"Fits":          {reason: "What others hold is subtracted.", others: []client.Object{holding("a", "3")}, request: cpu("5"), wantStatus: authv1beta1.ResourceSliceConditionAccepted, wantReason: pool.ReasonGranted},
		"Exhausted":     {reason: "A request over what is left is denied by the budget.", others: []client.Object{holding("a", "3"), holding("b", "3")}, request: cpu("3"), wantStatus: authv1beta1.ResourceSliceConditionDenied, wantReason: budget.ReasonExhausted},
		"DeniedIgnored": {reason: "Denied slices hold nothing.", others: []client.Object{denied}, request: cpu("8"), wantStatus: authv1beta1.ResourceSliceConditionAccepted, wantReason: pool.ReasonGranted},
		"OtherClass":    {reason: "Other classes do not draw from this pool.", others: []client.Object{otherClass}, request: cpu("8"), wantStatus: authv1beta1.ResourceSliceConditionAccepted, wantReason: pool.ReasonGranted},
		"NotPooled":     {reason: "A resource the pool does not offer is denied.", request: corev1.ResourceList{"cpu": resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")}, wantStatus: authv1beta1.ResourceSliceConditionDenied, wantReason: pool.ReasonNotPooled},
		"NoRequest":     {reason: "A slice asking nothing is denied.", request: corev1.ResourceList{}, wantStatus: authv1beta1.ResourceSliceConditionDenied, wantReason: pool.ReasonNoRequest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := slicetest.NewSlice("new", slicetest.WithClass(class))
			s.Spec.Resources = tc.request
			hs, _ := newHarness(t, append([]client.Object{s}, tc.others...)...)
			res := hs.Reconcile(s)
			require.NoError(t, res.Err, tc.reason)
			assert.Equal(t, tc.wantStatus, res.Decision, "%s (%s)", tc.reason, res.Message)
			assert.Equal(t, tc.wantReason, res.Reason, "%s (%s)", tc.reason, res.Message)
			hs.AssertIdempotent(s)
		})
	}
}

func TestDeletedSliceReleasesItsShare(t *testing.T) {
	a := holding("a", "8")
	s := slicetest.NewSlice("new", slicetest.WithClass(class), slicetest.WithRequest("cpu", "4"))
	hs, b := newHarness(t, a, s)
	full := hs.Reconcile(s)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, full.Decision, "pool full (%s)", full.Message)
	assert.Contains(t, full.Message, "cpu: asked 4, waits until 4 is free")

	require.NoError(t, hs.Client.Delete(context.Background(), a))
	hs.Reconcile(a) // the deletion's reconcile gives a's share back
	free := b.Free()["cpu"]
	assert.Equal(t, "8", free.String())
	freed := hs.Reconcile(s)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, freed.Decision, "after the holder is deleted (%s)", freed.Message)
	used := b.Used()["cpu"]
	assert.Equal(t, "4", used.String())
}

func cpu(q string) corev1.ResourceList { return corev1.ResourceList{"cpu": resource.MustParse(q)} }
