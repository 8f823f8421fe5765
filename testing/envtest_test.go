package slicetest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/testwait"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// The helpers are proven on a real API server by the integration suite
// (test/integration); these tests pin down their calls and their errors on
// controller-runtime's fake client.

// calls records the writes made through a fake client, as "verb" or
// "verb/subresource".
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// fakeAPI returns a fake client with the status subresource for slices that
// records writes in c and runs funcs (may be zero) on the calls it sets.
func fakeAPI(t *testing.T, c *calls, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, authv1beta1.AddToScheme(scheme))
	create, subUpdate := funcs.Create, funcs.SubResourceUpdate
	funcs.Create = func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		c.add("create")
		if create != nil {
			return create(ctx, cl, obj, opts...)
		}
		return cl.Create(ctx, obj, opts...)
	}
	funcs.SubResourceUpdate = func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		c.add("update/" + sub)
		if subUpdate != nil {
			return subUpdate(ctx, cl, sub, obj, opts...)
		}
		return cl.SubResource(sub).Update(ctx, obj, opts...)
	}
	return fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&authv1beta1.ResourceSlice{}).
		WithObjects(objs...).
		WithInterceptorFuncs(funcs).
		Build()
}

func TestCreateAsLiqo(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason    string
		slice     *authv1beta1.ResourceSlice
		wantCalls []string
		wantAuth  bool
	}{
		"Authenticated": {
			reason:    "A slice as NewSlice builds it is created, then its status is written with an update, as Liqo does.",
			slice:     slicetest.NewSlice("s", slicetest.WithClass("gold")),
			wantCalls: []string{"create", "update/status"},
			wantAuth:  true,
		},
		"Unauthenticated": {
			reason:    "A slice Liqo has not authenticated has no status to write.",
			slice:     slicetest.NewSlice("s", slicetest.WithClass("gold"), slicetest.Unauthenticated()),
			wantCalls: []string{"create"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var c calls
			cl := fakeAPI(t, &c, interceptor.Funcs{})
			require.NoError(t, slicetest.CreateAsLiqo(ctx, cl, tc.slice), tc.reason)
			assert.Equal(t, tc.wantCalls, c.list(), tc.reason)

			var got authv1beta1.ResourceSlice
			require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tc.slice), &got))
			assert.Equal(t, tc.wantAuth, conditions.IsAuthenticated(&got), tc.reason)
			assert.Equal(t, got.ResourceVersion, tc.slice.ResourceVersion, "the caller's slice holds the stored object")
		})
	}
}

func TestCreateAsLiqoNamesTheFailedStep(t *testing.T) {
	ctx := context.Background()
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "resourceslices"}, "s", errors.New("no"))
	var c calls
	cl := fakeAPI(t, &c, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return refused
		},
	})
	err := slicetest.CreateAsLiqo(ctx, cl, slicetest.NewSlice("s"))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "the API error is wrapped: %v", err)
	assert.Contains(t, err.Error(), "writing the status")
}

func TestAuthenticateRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	slice := slicetest.NewSlice("s", slicetest.WithClass("gold"), slicetest.Unauthenticated())
	var c calls
	conflicts := 1
	cl := fakeAPI(t, &c, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if conflicts > 0 {
				conflicts--
				return slicetest.Conflict()
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
	}, slice)

	require.NoError(t, slicetest.Authenticate(ctx, cl, client.ObjectKeyFromObject(slice)))
	assert.Equal(t, []string{"update/status", "update/status"}, c.list(), "one conflict, one retry")

	var got authv1beta1.ResourceSlice
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(slice), &got))
	assert.True(t, conditions.IsAuthenticated(&got))
	require.NotNil(t, got.Status.AuthParams)
	assert.NotEmpty(t, got.Status.AuthParams.SignedCRT)
}

func TestWaitForDecision(t *testing.T) {
	decided := slicetest.NewSlice("decided", slicetest.Decided(authv1beta1.ResourceSliceConditionDenied, "Full"))
	waiting := slicetest.NewSlice("waiting")
	cases := map[string]struct {
		reason    string
		name      string
		wantErr   error
		wantSlice bool
	}{
		"Decided": {
			reason: "A decided slice is returned at once.", name: "decided", wantSlice: true,
		},
		"Undecided": {
			reason: "An undecided slice ends with the context, returned as last read.", name: "waiting",
			wantErr: context.DeadlineExceeded, wantSlice: true,
		},
		"Missing": {
			reason: "A slice never found ends with the context, and no slice.", name: "missing",
			wantErr: context.DeadlineExceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cl := fakeAPI(t, &calls{}, interceptor.Funcs{}, decided.DeepCopy(), waiting.DeepCopy())
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			got, err := slicetest.WaitForDecision(ctx, cl, client.ObjectKey{Namespace: slicetest.DefaultNamespace, Name: tc.name})
			if tc.wantErr == nil {
				assert.NoError(t, err, tc.reason)
			} else {
				assert.ErrorIs(t, err, tc.wantErr, tc.reason)
			}
			if tc.wantSlice {
				require.NotNil(t, got, tc.reason)
				assert.Equal(t, tc.name, got.Name, tc.reason)
			} else {
				assert.Nil(t, got, tc.reason)
			}
		})
	}
}

func TestWaitForDecisionSeesALateDecision(t *testing.T) {
	slice := slicetest.NewSlice("s")
	reads := 0
	cl := fakeAPI(t, &calls{}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			if reads == 3 { // a controller decides between the second and the third read
				var rs authv1beta1.ResourceSlice
				if err := cl.Get(ctx, key, &rs); err != nil {
					return err
				}
				conditions.Accept(&rs, "Granted", "")
				if err := cl.Status().Update(ctx, &rs); err != nil {
					return err
				}
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}, slice)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	got, err := slicetest.WaitForDecision(ctx, cl, client.ObjectKeyFromObject(slice))
	require.NoError(t, err)
	assert.True(t, conditions.IsAccepted(got))
	assert.Equal(t, 3, reads, "it stops at the first decided read")
}

func TestWaitForDecisionReturnsAReadErrorAtOnce(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "resourceslices"}, "s", errors.New("no"))
	cl := fakeAPI(t, &calls{}, interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return refused
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	_, err := slicetest.WaitForDecision(ctx, cl, client.ObjectKey{Namespace: slicetest.DefaultNamespace, Name: "s"})
	assert.True(t, apierrors.IsForbidden(err), "want the read error, got %v", err)
	assert.NoError(t, ctx.Err(), "the error must come before the deadline")
}

// client-go's rate limiter refuses a read that would wait past the context's
// deadline, with an error that does not wrap context.DeadlineExceeded and
// before the context ends: reads must not carry the deadline, so that a slice
// left undecided is reported as a timeout.
func TestWaitForDecisionReadsWithoutTheDeadline(t *testing.T) {
	slice := slicetest.NewSlice("s")
	cl := fakeAPI(t, &calls{}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := ctx.Deadline(); ok {
				return errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}, slice)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got, err := slicetest.WaitForDecision(ctx, cl, client.ObjectKeyFromObject(slice))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotNil(t, got, "the slice as last read")
}
