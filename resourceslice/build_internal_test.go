package resourceslice

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/stopqueue"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// One classReconciler per class (issue 36): SetupWithManager completes the
// classReconciler it is called on with the manager's collaborators (its
// client, recorder and state stay as NewReconciler built them), the
// controller runs that one, and the class is claimed in the set.
func TestSetupWithManagerCompletesTheReconciler(t *testing.T) {
	const class = "setup-gold"
	mgr := envkit.UnreachableManager(t)
	b, err := budget.New(class, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	require.NoError(t, err)
	grant := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	r, err := buildReconciler(mgr.GetClient(), class, grant, WithBudget(b), WithMetricsRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	before := *r
	set, err := NewClassSet(mgr)
	require.NoError(t, err)

	require.NoError(t, r.setupWithManager(set, ctrl.NewControllerManagedBy(mgr)))

	assert.Equal(t, before.client, r.client, "the client, which writes the status, is the one NewReconciler was given")
	assert.NotEqual(t, before.recorder, r.recorder, "without withEventRecorder, the manager's recorder records")
	assert.NotNil(t, r.scope.status, "the status.class view was given to r")
	require.Len(t, r.feeds, 1, "r draws through the budget's feed")
	assert.NotNil(t, r.namespaces, "the namespace store was given to r")
	assert.Same(t, before.classState, r.classState)

	assert.True(t, set.mc.claims[class], "the class is claimed in the set")
	err = r.setupWithManager(set, ctrl.NewControllerManagedBy(mgr))
	assert.ErrorIs(t, err, ErrClassRegistered, "a class set up twice in one set")
}

// The class controllers' queue is controller-runtime's priority queue,
// wrapped against its shutdown deadlock: it still takes priorities (the
// initial list is replayed low).
func TestClassQueueIsThePriorityQueueWrapped(t *testing.T) {
	q := priorityQueue(logr.Discard())("resourceslice-gold",
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second))
	defer q.ShutDown()
	if _, ok := q.(*stopqueue.Queue[reconcile.Request]); !ok {
		t.Fatalf("the class queue is a %T, not the wrapped priority queue", q)
	}
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		t.Fatalf("the class queue (%T) does not take priorities", q)
	}
	low, high := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "low"}},
		reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "high"}}
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, low)
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(0)}, high)
	first, _, _ := pq.GetWithPriority()
	if first != high {
		t.Fatalf("took %v first, want the higher priority %v", first, high)
	}
}
