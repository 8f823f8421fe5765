package resourceslice

import (
	"context"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingInformer keeps the event handler a source adds.
type recordingInformer struct {
	*controllertest.FakeInformer
	h toolscache.ResourceEventHandler
}

func (i *recordingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.h = h
	return i.FakeInformer.AddEventHandler(h)
}

// oneInformerCache is a cache whose every informer is inf.
type oneInformerCache struct {
	cache.Cache
	inf *recordingInformer
}

func (c oneInformerCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.inf, nil
}

// The SDK's informer source forwards isInInitialList as controller-runtime's
// Kind source does, so that with the priority queue the initial replay of
// every slice waits behind live changes.
func TestInformerSourceForwardsIsInInitialList(t *testing.T) {
	inf := &recordingInformer{FakeInformer: &controllertest.FakeInformer{}}
	var got []bool
	src := &informerSource{
		cache: oneInformerCache{inf: inf}, obj: &authv1beta1.ResourceSlice{},
		handler: crhandler.Funcs{CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			got = append(got, e.IsInInitialList)
		}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	require.NoError(t, src.Start(ctx, q))
	require.NotNil(t, inf.h)
	inf.h.OnAdd(&authv1beta1.ResourceSlice{}, true)
	inf.h.OnAdd(&authv1beta1.ResourceSlice{}, false)
	assert.Equal(t, []bool{true, false}, got, "the initial list and a later creation are told apart")
}
