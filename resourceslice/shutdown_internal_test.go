package resourceslice

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
)

// A status write asked for after the reconcile's context ended sends
// nothing, and the budget forgets the admission it was to carry at once
// (NotApplied): a stopped leader's last decision holds nothing.
func TestWriteSendsNothingOnceItsContextEnded(t *testing.T) {
	rs := &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u", ResourceVersion: "7"},
		Spec:       authv1beta1.ResourceSliceSpec{Class: "gold", Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}},
	}
	scheme := runtime.NewScheme()
	require.NoError(t, authv1beta1.AddToScheme(scheme))
	var patches atomic.Int32
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&authv1beta1.ResourceSlice{}).WithObjects(rs.DeepCopy()).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				patches.Add(1)
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	grant := handler.Func(func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error) { return ctrl.Result{}, nil })
	b, err := budget.New("pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	require.NoError(t, err)
	r, err := buildReconciler(c, "gold", grant, WithBudget(b), WithMetricsRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	require.Len(t, r.ledgers, 1)
	l := r.ledgers[0]
	key := client.ObjectKeyFromObject(rs)
	l.ObserveSlice(ledger.Slice{Key: key, UID: rs.UID, RV: rs.ResourceVersion, Class: "gold"})
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "gold", Key: key},
		UID: rs.UID, Base: rs.ResourceVersion, Offer: rs.Spec.Resources})
	require.Nil(t, refusal)
	used := l.Used()
	require.Equal(t, "3", used.Cpu().String(), "the admission counts while its write is to come")

	desired := rs.DeepCopy()
	desired.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(desired, "Granted", "")
	ctx, stop := context.WithCancel(context.Background())
	stop()
	w, o, err := r.write(ctx, rs, desired)
	require.ErrorIs(t, err, context.Canceled)
	r.settle(ticket{key: key, uid: rs.UID, base: rs.ResourceVersion, consumer: "ns", attempts: as}, w, o, desired)
	assert.Zero(t, patches.Load(), "no patch is sent after the stop")
	used = l.Used()
	assert.True(t, used.Cpu().IsZero(), "the admission is forgotten at once: %s", used.Cpu())
}

// A status patch's context outlives its reconcile's by writeGrace, never
// less (a patch already sent may be answered), and ends at once when the
// write ends.
func TestWriteContextOutlivesItsReconcileByTheGrace(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	wctx, cancel := writeContext(ctx)
	defer cancel()
	stopAt := time.Now()
	stop()
	select {
	case <-wctx.Done():
		assert.GreaterOrEqual(t, time.Since(stopAt), writeGrace, "the write's context ended before its grace")
	case <-time.After(writeGrace + testwait.Timeout):
		t.Fatalf("the write's context did not end within %s of its reconcile's", writeGrace+testwait.Timeout)
	}

	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	wctx, cancel = writeContext(ctx)
	assert.NoError(t, wctx.Err(), "the write's context lives while its reconcile's does")
	cancel()
	assert.ErrorIs(t, wctx.Err(), context.Canceled, "the write's end ends it")
}
