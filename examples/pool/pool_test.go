package pool_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/pool"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

const class = "shared"

// lazy lets the pool read through the harness's client, which exists only
// once the harness is built.
type lazy struct{ p *pool.Pool }

func (l *lazy) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	return l.p.Handle(ctx, rs)
}

func holding(name, cpu string) *authv1beta1.ResourceSlice {
	s := slicetest.NewSlice(name, slicetest.WithClass(class), slicetest.WithRequest("cpu", cpu), slicetest.Decided(conditions.Accepted, pool.ReasonGranted))
	s.Status.Resources = s.Spec.Resources.DeepCopy()
	return s
}

func newHarness(t *testing.T, objs ...client.Object) *slicetest.Harness {
	t.Helper()
	l := &lazy{}
	hs := slicetest.New(t, class, l, slicetest.WithObjects(objs...))
	p, err := pool.New(hs.Client, class, corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("16Gi")})
	require.NoError(t, err)
	l.p = p
	return hs
}

func TestPool(t *testing.T) {
	denied := slicetest.NewSlice("denied", slicetest.WithClass(class), slicetest.WithRequest("cpu", "8"), slicetest.Decided(conditions.Denied, pool.ReasonExhausted))
	otherClass := slicetest.NewSlice("gold", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "8"), slicetest.Decided(conditions.Accepted, "x"))
	otherClass.Status.Resources = otherClass.Spec.Resources.DeepCopy()
	cases := map[string]struct {
		reason     string
		others     []client.Object
		cpu        string
		wantStatus authv1beta1.ResourceSliceConditionStatus
		wantReason string
	}{
		"EmptyPool":     {reason: "An empty pool grants a fitting request.", cpu: "8", wantStatus: conditions.Accepted, wantReason: pool.ReasonGranted},
		"Fits":          {reason: "What others hold is subtracted.", others: []client.Object{holding("a", "3")}, cpu: "5", wantStatus: conditions.Accepted, wantReason: pool.ReasonGranted},
		"Exhausted":     {reason: "A request over what is left is denied.", others: []client.Object{holding("a", "3"), holding("b", "3")}, cpu: "3", wantStatus: conditions.Denied, wantReason: pool.ReasonExhausted},
		"DeniedIgnored": {reason: "Denied slices hold nothing.", others: []client.Object{denied}, cpu: "8", wantStatus: conditions.Accepted, wantReason: pool.ReasonGranted},
		"OtherClass":    {reason: "Other classes do not draw from this pool.", others: []client.Object{otherClass}, cpu: "8", wantStatus: conditions.Accepted, wantReason: pool.ReasonGranted},
		"NotPooled":     {reason: "A resource the pool does not offer is denied.", cpu: "1", wantStatus: conditions.Denied, wantReason: pool.ReasonExhausted},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := []slicetest.SliceOption{slicetest.WithClass(class), slicetest.WithRequest("cpu", tc.cpu)}
			if name == "NotPooled" {
				opts = append(opts, slicetest.WithRequest("nvidia.com/gpu", "1"))
			}
			s := slicetest.NewSlice("new", opts...)
			hs := newHarness(t, append([]client.Object{s}, tc.others...)...)
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
	hs := newHarness(t, a, s)
	full := hs.Reconcile(s)
	require.Equal(t, conditions.Denied, full.Decision, "pool full (%s)", full.Message)
	require.NoError(t, hs.Client.Delete(context.Background(), a))
	freed := hs.Reconcile(s)
	assert.Equal(t, conditions.Accepted, freed.Decision, "after the holder is deleted (%s)", freed.Message)
}
