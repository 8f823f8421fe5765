package feed

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
)

// A write whose answer was lost is settled by the budget's feed with one
// read, whether or not a class still decides the slice: a ClassSet.Stop
// that gave up waiting cancels the write and detaches the class, and the
// offer must not stay counted in the budget the class shared.
func TestFeedSettlesLostAnswersWithoutTheClass(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, authv1beta1.AddToScheme(scheme))
	rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rs).
		WithIndex(&authv1beta1.ResourceSlice{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).Build()
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "s"}, rs))

	l, err := ledger.New("shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	require.NoError(t, err)
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: func(types.NamespacedName) {}}))
	require.NoError(t, l.Attach("silver", ledger.Class{Wake: func(types.NamespacedName) {}}))
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	l.ObserveSlice(ledger.Slice{Key: key, UID: "u", RV: rs.ResourceVersion, Class: "gold"})
	as, refusal := ledger.AdmitAll([]*ledger.Ledger{l}, ledger.Request{Holder: ledger.Holder{Class: "gold", Key: key},
		UID: "u", Base: rs.ResourceVersion, Offer: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}})
	require.Nil(t, refusal)
	l.Done(as[0], ledger.Unknown)
	l.Detach("gold") // the class stopped; silver still draws from the budget
	used := l.Used()
	assert.Equal(t, "3", used.Cpu().String(), "held until the cluster says")

	f := &Feed{l: l, reader: c, settles: workqueue.NewTypedRateLimitingQueue(
		workqueue.NewTypedItemExponentialFailureRateLimiter[settleItem](time.Millisecond, time.Second))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.settleLoop(ctx)
	defer f.settles.ShutDown()
	f.SettleLater(key, rs.ResourceVersion, ledger.Unknown)
	assert.Eventually(t, func() bool { u := l.Used(); return u.Cpu().IsZero() }, testwait.Timeout, 10*time.Millisecond,
		"one read showing the base version settles it: not applied")
}
