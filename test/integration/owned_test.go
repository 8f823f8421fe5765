package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// ownerPolicy accepts (or denies) every slice and owns what set returns.
type ownerPolicy struct {
	mu   sync.Mutex
	deny bool
	set  func(rs *authv1beta1.ResourceSlice) []client.Object
}

var _ handler.Owner = (*ownerPolicy)(nil)

func (p *ownerPolicy) Handle(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deny {
		conditions.Deny(rs, "Closed", "closed")
		return ctrl.Result{}, nil
	}
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
}

func (p *ownerPolicy) Owned(_ context.Context, rs *authv1beta1.ResourceSlice) ([]client.Object, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set(rs), nil
}

func (p *ownerPolicy) update(f func(p *ownerPolicy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func priorityClass(name string) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 1000}
}

// exists reports whether obj (by key) exists, and returns it.
func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := cp.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// Owned objects per accepted slice (issue 19), on a real API server:
// applied with labels and, in the slice's namespace, an ownerReference;
// re-applied when deleted by hand; a set that shrinks on a WithWatch pass
// prunes only what it dropped; a failing apply prunes nothing; a denial
// removes them all.
func TestOwnedObjectsFollowTheGrant(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns, acct := testkit.Namespace(t, cp, "owned"), testkit.Namespace(t, cp, "owned-accounting")
	const class = "owned-gold"
	trigger := configMap(ns, "owned-trigger", map[string]string{"v": "1"})
	require.NoError(t, cp.Client.Create(ctx, trigger))
	withPC := true
	broken := false
	p := &ownerPolicy{}
	p.set = func(rs *authv1beta1.ResourceSlice) []client.Object {
		objs := []client.Object{
			configMap(rs.Namespace, "local-"+rs.Name, map[string]string{"cpu": rs.Status.Resources.Cpu().String()}),
			configMap(acct, "record-"+rs.Name, map[string]string{"slice": rs.Name}),
		}
		if withPC {
			objs = append(objs, priorityClass("owned-"+rs.Name))
		}
		if broken {
			objs = append(objs, configMap(acct, "broken-"+rs.Name, map[string]string{"not a valid key!": "x"}))
		}
		return objs
	}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, p, fastBackoff(),
			resourceslice.WithOwnedTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}),
			resourceslice.WithWatch(&corev1.ConfigMap{}, ownTrigger(ns)))
	})
	create(t, sliceIn(ns, "s", class))
	rs := waitForDecision(t, ns, "s")
	require.True(t, conditions.IsAccepted(rs))

	local, record, pc := configMap(ns, "local-s", nil), configMap(acct, "record-s", nil), priorityClass("owned-s")
	testkit.Eventually(t, "the three owned objects applied", func() bool {
		return exists(t, local) && exists(t, record) && exists(t, pc)
	})
	for _, o := range []client.Object{local, record, pc} {
		assert.Equal(t, class, o.GetLabels()["sliceclass.io/class"], "%s labelled for the class", o.GetName())
		assert.Equal(t, string(rs.UID), o.GetLabels()["sliceclass.io/slice-uid"], "%s labelled with its slice", o.GetName())
		assert.Empty(t, o.GetFinalizers(), "no finalizer, ever")
	}
	if assert.Len(t, local.OwnerReferences, 1, "the slice's own namespace: a controller ownerReference") {
		assert.Equal(t, rs.UID, local.OwnerReferences[0].UID)
		assert.True(t, *local.OwnerReferences[0].Controller)
	}
	assert.Empty(t, record.OwnerReferences, "another namespace: none (swept by label)")
	assert.Empty(t, pc.OwnerReferences, "cluster-scoped: none (swept by label)")

	// Deleted by hand: restored, through the owned-type watch.
	require.NoError(t, cp.Client.Delete(ctx, record))
	testkit.Eventually(t, "the deleted record restored", func() bool {
		r := configMap(acct, "record-s", nil)
		return exists(t, r) && r.UID != record.UID
	})

	// The set shrinks, seen on a WithWatch pass: only the PriorityClass goes.
	localUID := local.UID
	p.update(func(*ownerPolicy) { withPC = false })
	bump(t, trigger)
	testkit.Eventually(t, "the dropped PriorityClass pruned", func() bool { return !exists(t, priorityClass("owned-s")) })
	kept := configMap(ns, "local-s", nil)
	require.True(t, exists(t, kept))
	assert.Equal(t, localUID, kept.UID, "the objects still in the set are kept")

	// A failing apply prunes nothing: the set drops the local ConfigMap
	// and adds one the API server refuses.
	p.update(func(*ownerPolicy) {
		broken = true
		p.set = func(rs *authv1beta1.ResourceSlice) []client.Object {
			return []client.Object{configMap(acct, "record-"+rs.Name, map[string]string{"slice": rs.Name}),
				configMap(acct, "broken-"+rs.Name, map[string]string{"not a valid key!": "x"})}
		}
	})
	bump(t, trigger)
	testkit.Eventually(t, "the failed apply reported", hasEvent(t, ns, "s", "OwnedApplyFailed"))
	testkit.Consistently(t, 2*time.Second, "nothing pruned after a failed apply", func() bool { return exists(t, configMap(ns, "local-s", nil)) })
	assert.True(t, conditions.IsAccepted(get(t, ns, "s")), "the decision stands")

	// Denied: everything removed.
	p.update(func(p *ownerPolicy) { p.deny = true; broken = false })
	bump(t, trigger)
	testkit.Eventually(t, "a denial removes every owned object", func() bool {
		return !exists(t, configMap(ns, "local-s", nil)) && !exists(t, configMap(acct, "record-s", nil))
	})
}

// A slice deleted while the manager is down leaves objects no
// ownerReference reaches (another namespace, cluster-scoped): the
// restarted manager sweeps them by label, and keeps a live slice's.
func TestOwnedObjectsSweptAfterRestart(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	ns, acct := testkit.Namespace(t, cp, "owned-sweep"), testkit.Namespace(t, cp, "owned-sweep-accounting")
	const class = "owned-sweep"
	p := &ownerPolicy{set: func(rs *authv1beta1.ResourceSlice) []client.Object {
		return []client.Object{configMap(acct, "record-"+rs.Name, nil), priorityClass("sweep-" + rs.Name)}
	}}
	register := func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, p, fastBackoff(),
			resourceslice.WithOwnedTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}))
	}
	stop := testkit.StartManager(t, cp, register).Stop
	create(t, sliceIn(ns, "gone", class))
	create(t, sliceIn(ns, "live", class))
	testkit.Eventually(t, "both slices' objects applied", func() bool {
		return exists(t, configMap(acct, "record-gone", nil)) && exists(t, priorityClass("sweep-gone")) &&
			exists(t, configMap(acct, "record-live", nil)) && exists(t, priorityClass("sweep-live"))
	})
	stop()
	require.NoError(t, cp.Client.Delete(ctx, get(t, ns, "gone")))
	testkit.Eventually(t, "the slice gone", func() bool {
		return apierrors.IsNotFound(cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gone"}, &authv1beta1.ResourceSlice{}))
	})
	require.True(t, exists(t, configMap(acct, "record-gone", nil)), "nothing removed them while the manager was down")

	testkit.StartManager(t, cp, register)
	testkit.Eventually(t, "the gone slice's objects swept", func() bool {
		return !exists(t, configMap(acct, "record-gone", nil)) && !exists(t, priorityClass("sweep-gone"))
	})
	assert.True(t, exists(t, configMap(acct, "record-live", nil)), "the live slice's objects kept")
	assert.True(t, exists(t, priorityClass("sweep-live")))
}

// ownTrigger passes events of the test's trigger ConfigMap only.
func ownTrigger(ns string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == ns && o.GetName() == "owned-trigger" })
}

// bump changes the trigger ConfigMap, causing a WithWatch pass.
func bump(t testing.TB, cm *corev1.ConfigMap) {
	t.Helper()
	require.NoError(t, cp.Client.Get(context.Background(), client.ObjectKeyFromObject(cm), cm))
	cm.Data["v"] += "1"
	require.NoError(t, cp.Client.Update(context.Background(), cm))
}
