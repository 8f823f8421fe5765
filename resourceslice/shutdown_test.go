package resourceslice_test

import (
	"context"
	"sync/atomic"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// A reconcile whose context has ended (the manager stopping) starts
// nothing: before the handler call, the handler is not called; during it,
// its answer is discarded without a HandlerFailed event. Either way no
// status is written and the error says the context ended. (On a manager,
// shutdownPolicy turns that error into a quiet stop: see
// TestStoppedManagerStopsDecidingAtOnce in test/integration.)
func TestReconcileStartsNothingOnceItsContextEnded(t *testing.T) {
	cases := map[string]struct {
		reason string
		// during ends the context inside the handler call; else it has
		// ended before Reconcile.
		during    bool
		wantCalls int32
	}{
		"EndedBefore": {reason: "A stopped controller calls no handler.", wantCalls: 0},
		"EndedDuring": {reason: "An answer given after the stop is not written, and the handler is not blamed.", during: true, wantCalls: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rs := goldSlice("a")
			scheme := runtime.NewScheme()
			require.NoError(t, clientgoscheme.AddToScheme(scheme))
			require.NoError(t, authv1beta1.AddToScheme(scheme))
			var patches atomic.Int32
			c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&authv1beta1.ResourceSlice{}).WithObjects(rs).
				WithInterceptorFuncs(interceptor.Funcs{
					SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
						patches.Add(1)
						return c.SubResource(sub).Patch(ctx, obj, p, opts...)
					},
				}).Build()
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var calls atomic.Int32
			h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				calls.Add(1)
				if tc.during {
					stop() // the manager stops while the handler decides
				}
				rs.Status.Resources = rs.Spec.Resources.DeepCopy()
				conditions.Accept(rs, "Granted", "decided as the manager stopped")
				return ctrl.Result{}, nil
			})
			rec := events.NewFakeRecorder(10)
			r, err := resourceslice.NewReconciler(c, gold, h,
				resourceslice.WithEventRecorder(rec), resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()))
			require.NoError(t, err)
			if !tc.during {
				stop()
			}

			_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rs)})
			require.ErrorIs(t, err, context.Canceled, tc.reason)
			assert.Equal(t, tc.wantCalls, calls.Load(), "handler calls: %s", tc.reason)
			assert.Zero(t, patches.Load(), "status patches: %s", tc.reason)
			assert.Empty(t, rec.Events, "events: %s", tc.reason)
			var stored authv1beta1.ResourceSlice
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(rs), &stored))
			assert.False(t, conditions.IsDecided(&stored), tc.reason)
		})
	}
}
