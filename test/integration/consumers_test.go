package integration

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// tenantNamespace creates namespace name as Liqo makes a tenant namespace
// on the provider: labelled liqo.io/remote-cluster-id with the consumer's
// cluster ID.
func tenantNamespace(t *testing.T, name, clusterID string) string {
	t.Helper()
	require.NoError(t, cp.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{"liqo.io/remote-cluster-id": clusterID},
	}}))
	return name
}

// sliceStates lists the live slices of class in ns (not being deleted) by
// the "Status/Reason" of their Resources condition ("" when undecided).
func sliceStates(t *testing.T, ns, class string) map[string][]authv1beta1.ResourceSlice {
	t.Helper()
	var list authv1beta1.ResourceSliceList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(ns)))
	out := map[string][]authv1beta1.ResourceSlice{}
	for _, rs := range list.Items {
		if string(rs.Spec.Class) != class || !rs.DeletionTimestamp.IsZero() {
			continue
		}
		key := ""
		if c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
			key = string(c.Status) + "/" + c.Reason
		}
		out[key] = append(out[key], rs)
	}
	return out
}

func countAccepted(t *testing.T, ns, class string) int {
	t.Helper()
	n := 0
	for key, items := range sliceStates(t, ns, class) {
		if len(key) > len(authv1beta1.ResourceSliceConditionAccepted) && key[:len(authv1beta1.ResourceSliceConditionAccepted)] == string(authv1beta1.ResourceSliceConditionAccepted) {
			n += len(items)
		}
	}
	return n
}

// A consumer limit holds from a cold cache: 8 slices of one consumer exist
// before the manager starts, 4 workers decide them, and the consumer gets
// exactly its limit, every run; a second consumer gets its own limit at the
// same time; deleting an Accepted slice admits exactly one more. The grants
// are watched on the API server at every event.
func TestConsumerLimitFromAColdCache(t *testing.T) {
	cp.Require(t)
	const (
		runs     = 3
		perNs    = 8
		limitCPU = 2
	)
	var figures []string
	for run := range runs {
		ok := t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			id := fmt.Sprintf("climit-%d", run)
			class := id
			consumers := []string{id + "-cluster-a", id + "-cluster-b"}
			nss := []string{tenantNamespace(t, id+"-a", consumers[0]), tenantNamespace(t, id+"-b", consumers[1])}
			watchers := make([]*grantwatch.Watcher, len(nss))
			for i, ns := range nss {
				watchers[i] = grantwatch.Watch(t, cp.Config, cp.Scheme, ns, fmt.Sprint(limitCPU))
			}
			var names []string
			for i := range perNs {
				names = append(names, fmt.Sprintf("s-%d", i))
			}
			for i, ns := range nss {
				for _, n := range names {
					create(t, sliceIn(ns, n, class, slicetest.WithConsumer(consumers[i])))
				}
			}
			b, err := budget.New(id, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
				budget.WithConsumerLimit(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprint(limitCPU))}))
			require.NoError(t, err)
			start := time.Now()
			stop := testkit.StartManager(t, cp, func(mgr manager.Manager) error {
				return resourceslice.AddToManager(mgr, class, accept("Granted", nil), resourceslice.WithBudget(b),
					resourceslice.WithMaxConcurrentReconciles(4))
			}).Stop
			for _, ns := range nss {
				testkit.Eventually(t, "every slice of "+ns+" decided", decided(ns, names...))
			}
			took := time.Since(start)
			var got []string
			for i, ns := range nss {
				states := sliceStates(t, ns, class)
				accepted, limited := states["Accepted/Granted"], states["Denied/"+budget.ReasonConsumerLimit]
				got = append(got, fmt.Sprintf("%s: %d Accepted, %d %s", consumers[i], len(accepted), len(limited), budget.ReasonConsumerLimit))
				assert.Len(t, accepted, limitCPU, "consumer %s gets exactly its limit: %v", consumers[i], keysOf(states))
				assert.Len(t, limited, perNs-limitCPU, "the others wait at the limit: %v", keysOf(states))
				for _, rs := range limited {
					msg := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources).Message
					assert.Contains(t, msg, fmt.Sprintf("budget %s: consumer %q would go over its limit beside what its other slices hold or are promised", id, consumers[i]), rs.Name)
					assert.Contains(t, msg, fmt.Sprintf("cpu: asked 1, limit %d", limitCPU), rs.Name)
				}
			}
			t.Logf("run %d (cold cache, 4 workers, %d slices in %s): %v", run, perNs*len(nss), took.Round(time.Millisecond), got)

			// Deleting one of a's Accepted slices admits exactly one more of a's.
			accepted := sliceStates(t, nss[0], class)["Accepted/Granted"]
			require.NotEmpty(t, accepted)
			require.NoError(t, cp.Client.Delete(context.Background(), &accepted[0]))
			before := map[string]bool{}
			for _, rs := range accepted {
				before[rs.Name] = true
			}
			testkit.Eventually(t, "another slice of a admitted", func() bool {
				for _, rs := range sliceStates(t, nss[0], class)["Accepted/Granted"] {
					if !before[rs.Name] {
						return true
					}
				}
				return false
			})
			testkit.Consistently(t, 1500*time.Millisecond, "a holds exactly 2 again and b still 2", func() bool {
				return countAccepted(t, nss[0], class) == limitCPU && countAccepted(t, nss[1], class) == limitCPU
			})
			states := sliceStates(t, nss[0], class)
			assert.Len(t, states["Denied/"+budget.ReasonConsumerLimit], perNs-limitCPU-1, "the rest of a's slices still wait")
			used := b.Used()[corev1.ResourceCPU]
			assert.Zero(t, used.Cmp(resource.MustParse(fmt.Sprint(2*limitCPU))), "the budget counts both consumers' 2 CPU: %s", used.String())
			for _, w := range watchers {
				w.Check(t)
			}
			stop()
			figures = append(figures, fmt.Sprintf("run %d: %v", run, got))
		})
		if !ok {
			break
		}
	}
	t.Logf("consumer limit 2, 8 slices per consumer, 4 workers, cold cache: %v", figures)
}

func keysOf(m map[string][]authv1beta1.ResourceSlice) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

// consumerRecorder is a handler that records resourceslice.Consumer(ctx)
// per slice and accepts.
type consumerRecorder struct {
	mu   sync.Mutex
	seen map[string]string
}

func (r *consumerRecorder) handler() handler.Func {
	return func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		r.mu.Lock()
		if r.seen == nil {
			r.seen = map[string]string{}
		}
		r.seen[rs.Namespace+"/"+rs.Name] = resourceslice.Consumer(ctx)
		r.mu.Unlock()
		return accept("Granted", nil)(ctx, rs)
	}
}

func (r *consumerRecorder) get(ns, name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.seen[ns+"/"+name]
	return c, ok
}

// The trusted consumer is the tenant namespace's liqo.io/remote-cluster-id
// label or, without it, the namespace itself, whatever the slice claims: a
// consumer writing other IDs on its slices cannot reset its limit, and a
// slice in a labelled namespace claiming another consumer is refused
// before the handler sees it.
func TestConsumerIsTheTenantNamespace(t *testing.T) {
	cp.Require(t)
	id := "consumer-of"
	class := id
	plain := testkit.Namespace(t, cp, id+"-plain")
	tenant := tenantNamespace(t, id+"-tenant", "cluster-lab")
	b, err := budget.New(id, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
		budget.WithConsumerLimit(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
	require.NoError(t, err)
	rec := &consumerRecorder{}
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, class, rec.handler(), resourceslice.WithBudget(b))
	})

	// An unlabelled namespace: three slices claiming three consumers are
	// one consumer, the namespace, limited to 1 CPU.
	for i, claim := range []string{"c1", "c2", "c3"} {
		if i > 0 {
			waitNextSecond()
		}
		create(t, sliceIn(plain, claim, class, slicetest.WithConsumer(claim)))
	}
	create(t, sliceIn(tenant, "lab", class, slicetest.WithConsumer("cluster-lab")))
	create(t, sliceIn(tenant, "liar", class, slicetest.WithConsumer("cluster-other")))
	testkit.Eventually(t, "every slice decided", func() bool {
		return decided(plain, "c1", "c2", "c3")() && decided(tenant, "lab", "liar")()
	})

	for _, n := range []string{"c1", "c2", "c3"} {
		c, ok := rec.get(plain, n)
		assert.True(t, ok, "the handler saw %s", n)
		assert.Equal(t, plain, c, "a slice in an unlabelled namespace is its namespace's, whatever it claims (%s)", n)
	}
	c, ok := rec.get(tenant, "lab")
	assert.True(t, ok)
	assert.Equal(t, "cluster-lab", c, "a labelled namespace gives its label")
	_, ok = rec.get(tenant, "liar")
	assert.False(t, ok, "a slice claiming another consumer never reaches the handler")
	assert.True(t, decision(tenant, "liar", "Denied/"+"ConsumerMismatch")())
	assert.True(t, decision(tenant, "lab", "Accepted/Granted")())

	states := sliceStates(t, plain, class)
	assert.Len(t, states["Accepted/Granted"], 1, "the namespace is one consumer limited to 1 CPU: %v", keysOf(states))
	limited := states["Denied/"+budget.ReasonConsumerLimit]
	assert.Len(t, limited, 2, "switching claimed IDs does not reset the limit: %v", keysOf(states))
	for _, rs := range limited {
		assert.Contains(t, conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeResources).Message, fmt.Sprintf("consumer %q would go over its limit beside what its other slices hold or are promised: cpu: asked 1, limit 1", plain))
	}
	accepted := make([]string, 0, 1)
	for _, rs := range states["Accepted/Granted"] {
		accepted = append(accepted, rs.Name)
	}
	sort.Strings(accepted)
	t.Logf("unlabelled namespace %s: slices claiming c1, c2, c3 are consumer %q, accepted %v; labelled namespace: consumer %q", plain, plain, accepted, c)
}
