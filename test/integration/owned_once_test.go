package integration

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// An owned object whose applied content has not changed is not applied
// again (issue 29): N Accepted slices with two owned objects each (a
// ConfigMap in the slice's namespace, a cluster-scoped PriorityClass) are
// all reconciled again by a WithWatch pass, and the manager sends no apply
// at all; an object deleted by hand, and one changed by hand, are still
// restored. The requests are counted on the manager's own transport, so
// other tests' traffic does not count. SLICECLASS_OWNED_SLICES sets N (100
// by default; issue 29 measures 2000).
func TestOwnedObjectsNotAppliedAgainWhenUnchanged(t *testing.T) {
	cp.Require(t)
	ctx := context.Background()
	n := 100
	if v := os.Getenv("SLICECLASS_OWNED_SLICES"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "SLICECLASS_OWNED_SLICES")
	}
	ns := testkit.Namespace(t, cp, "owned-once")
	const class = "owned-once"
	trigger := configMap(ns, "owned-trigger", map[string]string{"v": "1"})
	require.NoError(t, cp.Client.Create(ctx, trigger))
	var owns atomic.Int64 // calls of Owned: reconciles of Accepted slices
	p := &ownerPolicy{set: func(rs *authv1beta1.ResourceSlice) []client.Object {
		owns.Add(1)
		return []client.Object{configMap(rs.Namespace, "grant-"+rs.Name, map[string]string{"cpu": rs.Status.Resources.Cpu().String()}),
			priorityClass("owned-once-" + rs.Name)}
	}}
	for i := range n {
		create(t, sliceIn(ns, fmt.Sprintf("s-%04d", i), class))
	}

	counter := &requestCounter{n: map[string]int{}}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	testkit.StartManagerWith(t, cfg, testkit.ManagerOptions(t, cp.Scheme), func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, p, fastBackoff(),
			resourceslice.WithOwnedTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{}),
			resourceslice.WithWatch(&corev1.ConfigMap{}, ownTrigger(ns)),
			resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()),
			resourceslice.WithDecisionEvents(resourceslice.DecisionEventsNone))
	})
	// Up to thousands of slices (SLICECLASS_OWNED_SLICES), each with two
	// applies: bulk work.
	testkit.EventuallyScaled(t, testkit.Poller{}, 3, "every slice accepted and its two objects applied", func() bool {
		var list authv1beta1.ResourceSliceList
		require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(ns)))
		for i := range list.Items {
			if !conditions.IsAccepted(&list.Items[i]) {
				return false
			}
		}
		var cms corev1.ConfigMapList
		require.NoError(t, cp.Client.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{"sliceclass.io/class": class}))
		var pcs schedulingv1.PriorityClassList
		require.NoError(t, cp.Client.List(ctx, &pcs, client.MatchingLabels{"sliceclass.io/class": class}))
		return len(list.Items) == n && len(cms.Items) == n && len(pcs.Items) == n
	})
	quiet := func(what string) {
		t.Helper()
		last, since := owns.Load(), time.Now()
		testkit.Eventually(t, what, func() bool {
			if now := owns.Load(); now != last {
				last, since = now, time.Now()
			}
			return time.Since(since) > 2*time.Second
		})
	}
	quiet("the start-up reconciles over")

	// A pass reconciles every slice again; nothing changed, so nothing is
	// applied.
	before, owns0 := counter.take(), owns.Load()
	t.Logf("start-up (%d slices): %v", n, before)
	bump(t, trigger)
	testkit.Eventually(t, "every slice reconciled again by the pass", func() bool { return owns.Load()-owns0 >= int64(n) })
	quiet("the pass's reconciles over")
	pass, reconciles := counter.take(), owns.Load()-owns0
	total := 0
	for _, v := range pass {
		total += v
	}
	t.Logf("a pass over %d unchanged Accepted slices: %d reconciles, %d API requests (%.3f per reconcile): %v",
		n, reconciles, total, float64(total)/float64(reconciles), pass)
	assert.Zero(t, pass["APPLY configmaps"]+pass["APPLY priorityclasses"], "applies of unchanged owned objects")
	assert.Zero(t, pass["PATCH resourceslices/status"], "status patches of unchanged decisions")

	// Deleted by hand, changed by hand: both restored, each with its own
	// apply and no other.
	pc := priorityClass("owned-once-s-0001")
	require.True(t, exists(t, pc))
	require.NoError(t, cp.Client.Delete(ctx, pc))
	grant := configMap(ns, "grant-s-0002", nil)
	require.True(t, exists(t, grant))
	grant.Data["cpu"] = "64"
	require.NoError(t, cp.Client.Update(ctx, grant))
	testkit.Eventually(t, "the PriorityClass deleted by hand restored", func() bool {
		again := priorityClass("owned-once-s-0001")
		return exists(t, again) && again.UID != pc.UID
	})
	testkit.Eventually(t, "the ConfigMap changed by hand restored", func() bool {
		again := configMap(ns, "grant-s-0002", nil)
		return exists(t, again) && again.Data["cpu"] == "1"
	})
	quiet("the restoring reconciles over")
	restore := counter.take()
	t.Logf("restoring one object deleted and one changed by hand: %v", restore)
	assert.Equal(t, 1, restore["APPLY priorityclasses"], "the deleted PriorityClass applied once")
	assert.Equal(t, 1, restore["APPLY configmaps"], "the changed ConfigMap applied once")
}

// requestCounter counts the requests a client sends, by verb and resource
// ("APPLY configmaps", "PATCH resourceslices/status", "GET leases"); a
// server-side apply is "APPLY". Watches are counted when they start.
type requestCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

// RoundTrip counts req and sends it on.
func (c *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	verb := req.Method
	switch {
	case verb == http.MethodPatch && strings.Contains(req.Header.Get("Content-Type"), "apply-patch"):
		verb = "APPLY"
	case verb == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	}
	c.mu.Lock()
	c.n[verb+" "+resourceOf(req.URL.Path)]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// take returns the counts since the last take and starts again from zero.
func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.n)
	clear(c.n)
	return out
}

// resourceOf names the resource (and subresource) of an API path:
// /api/v1/namespaces/ns/configmaps/x is "configmaps",
// /apis/g/v/namespaces/ns/resourceslices/x/status "resourceslices/status".
func resourceOf(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) > 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) > 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return path
	}
	if len(segs) > 2 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	if len(segs) > 2 {
		return segs[0] + "/" + segs[2]
	}
	return segs[0]
}
