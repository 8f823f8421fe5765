package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/grantwatch"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// These tests run Liqo v1.2.0's own QuotaCreatorReconciler beside the class
// controller: it makes, for each Accepted slice, the Quota the provider's
// webhook enforces, and ignores slices that are not Accepted. A budget must
// hold what those Quotas enforce, whatever the class controller last wrote.

// withLiqoQuotas runs Liqo's QuotaCreator in mgr (see grantwatch).
func withLiqoQuotas(mgr manager.Manager) error { return grantwatch.RunLiqoQuotas(mgr) }

// quotaCPU is the CPU Liqo's Quota for the slice enforces; ok is false
// while there is none.
func quotaCPU(ns, name string) (q resource.Quantity, ok bool) {
	var rs authv1beta1.ResourceSlice
	if err := cp.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
		return q, false
	}
	var list offloadingv1beta1.QuotaList
	if err := cp.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return q, false
	}
	for _, x := range list.Items {
		if o := metav1.GetControllerOf(&x); o != nil && o.UID == rs.UID {
			return x.Spec.Resources[corev1.ResourceCPU], true
		}
	}
	return q, false
}

func quotaIs(ns, name, cpu string) func() bool {
	return func() bool {
		q, ok := quotaCPU(ns, name)
		return ok && q.Cmp(resource.MustParse(cpu)) == 0
	}
}

func setCPURequest(t *testing.T, ns, name, cpu string) {
	t.Helper()
	rs := get(t, ns, name)
	rs.Spec.Resources[corev1.ResourceCPU] = resource.MustParse(cpu)
	require.NoError(t, cp.Client.Update(context.Background(), rs))
}

// A consumer asking for more than is free does not escape the budget: the
// slice keeps its grant (Liqo's Quota stays), a Warning names what is
// short, and the growth is admitted with one write when capacity frees.
func TestQuotaGrowthKeepsTheGrant(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "quota-growth")
	w := grantwatch.Watch(t, cp.Config, cp.Scheme, ns, "10")
	b := mustBudget(t, "10")
	testkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "quota-growth", accept("Granted", nil), resourceslice.WithBudget(b), fastBackoff())
	})
	create(t, cpuSlice(ns, "a", "quota-growth", 4))
	waitNextSecond()
	create(t, cpuSlice(ns, "b", "quota-growth", 4))
	testkit.Eventually(t, "a and b Accepted with Quotas of 4 CPU", func() bool {
		return quotaIs(ns, "a", "4")() && quotaIs(ns, "b", "4")()
	})

	setCPURequest(t, ns, "a", "8")
	testkit.Eventually(t, "a's growth refused with a BudgetExhausted Warning", hasEvent(t, ns, "a", budget.ReasonExhausted))
	// The Warning is recorded when the budget refuses, before the status
	// write that follows it: wait for the write.
	const waits = "keeps its current offer; the larger one waits: budget cpu-10: cpu: asked 8, holds 4, waits until 4 more is free"
	testkit.Eventually(t, "a's condition says its growth waits", func() bool {
		c := conditions.Get(get(t, ns, "a"), authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Message == waits
	})
	rs := get(t, ns, "a")
	c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, c.Status, "a stays Accepted")
	assert.Equal(t, waits, c.Message,
		"the message names the budget and what is short, with what was asked and what the slice holds")
	var notes []string
	for _, e := range eventsFor(t, ns, "a") {
		if e.Reason == budget.ReasonExhausted {
			notes = append(notes, e.Note)
		}
	}
	require.NotEmpty(t, notes)
	assert.Contains(t, notes[0], "cpu: asked 8, holds 4, waits until 4 more is free", "the event gives the amounts")
	assert.Zero(t, rs.Status.Resources.Cpu().Cmp(resource.MustParse("4")), "a keeps its 4 CPU")

	waitNextSecond()
	create(t, cpuSlice(ns, "c", "quota-growth", 6))
	testkit.Eventually(t, "c waits: 8 of 10 CPU are still granted", decision(ns, "c", "Denied/"+budget.ReasonExhausted))
	testkit.Consistently(t, 2*time.Second, "a's Quota stays at 4 CPU while its growth waits", quotaIs(ns, "a", "4"))

	patches := statusPatches(t)
	require.NoError(t, cp.Client.Delete(context.Background(), get(t, ns, "b")))
	testkit.Eventually(t, "a's growth admitted once b is gone, and Liqo's Quota follows", quotaIs(ns, "a", "8"))
	assert.True(t, decision(ns, "c", "Denied/"+budget.ReasonExhausted)(), "c still waits: 2 CPU free")
	assert.LessOrEqual(t, statusPatches(t)-patches, 2, "the growth is one write (c's re-evaluation at most one more)")
	w.Check(t)
}

// A policy denial of an Accepted slice is not a release: Liqo keeps its
// Quota, so the budget keeps counting it; a restarted controller counts it
// from the Quota.
func TestQuotaDenialAfterAcceptance(t *testing.T) {
	cp.Require(t)
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%t", restart), func(t *testing.T) {
			ns := testkit.Namespace(t, cp, fmt.Sprintf("quota-deny-%t", restart))
			class := ns // a class of its own: a budget counts its class's slices in every namespace
			w := grantwatch.Watch(t, cp.Config, cp.Scheme, ns, "10")
			var deny atomic.Bool
			policy := handler.Func(func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				if rs.Name == "x" && deny.Load() {
					conditions.Deny(rs, "PolicyChanged", "the policy no longer serves x")
					return ctrl.Result{}, nil
				}
				return accept("Granted", nil)(ctx, rs)
			})
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policy"}, Data: map[string]string{"deny": "no"}}
			require.NoError(t, cp.Client.Create(context.Background(), cm))
			register := func(b *budget.Budget) func(manager.Manager) error {
				return func(mgr manager.Manager) error {
					if err := withLiqoQuotas(mgr); err != nil {
						return err
					}
					return resourceslice.AddToManager(mgr, class, policy, resourceslice.WithBudget(b), fastBackoff(),
						resourceslice.WithWatch(&corev1.ConfigMap{}))
				}
			}
			stop := testkit.StartManager(t, cp, register(mustBudget(t, "10"))).Stop
			create(t, cpuSlice(ns, "x", class, 6))
			testkit.Eventually(t, "x Accepted with a Quota of 6 CPU", quotaIs(ns, "x", "6"))

			deny.Store(true)
			cm.Data["deny"] = "yes"
			require.NoError(t, cp.Client.Update(context.Background(), cm))
			testkit.Eventually(t, "x denied by the policy", decision(ns, "x", "Denied/PolicyChanged"))
			assert.True(t, quotaIs(ns, "x", "6")(), "Liqo keeps x's Quota after the denial")

			if restart {
				stop()
				rv := get(t, ns, "x").ResourceVersion
				testkit.StartManager(t, cp, register(mustBudget(t, "10")))
				create(t, cpuSlice(ns, "y", class, 8))
				testkit.Eventually(t, "y waits: the restarted budget counts x's Quota", decision(ns, "y", "Denied/"+budget.ReasonExhausted))
				assert.Equal(t, rv, get(t, ns, "x").ResourceVersion, "the restarted controller wrote nothing for x, whose decision holds")
			} else {
				create(t, cpuSlice(ns, "y", class, 8))
				testkit.Eventually(t, "y waits: x's Quota still holds 6 CPU", decision(ns, "y", "Denied/"+budget.ReasonExhausted))
			}
			testkit.Consistently(t, 2*time.Second, "y keeps waiting", decision(ns, "y", "Denied/"+budget.ReasonExhausted))

			require.NoError(t, cp.Client.Delete(context.Background(), get(t, ns, "x")))
			testkit.Eventually(t, "y admitted once x is gone", quotaIs(ns, "y", "8"))
			w.Check(t)
		})
	}
}

// lossyTransport applies a share of the controller's status patches and
// then loses the answer (503), and cuts the first watches after a while.
type lossyTransport struct {
	next  http.RoundTripper
	share float64

	mu      sync.Mutex
	rnd     *rand.Rand
	lost    int
	cuts    int
	maxCuts int
}

func (l *lossyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/status") && strings.Contains(req.URL.Path, "/resourceslices/") {
		l.mu.Lock()
		lose := l.rnd.Float64() < l.share
		if lose {
			l.lost++
		}
		l.mu.Unlock()
		resp, err := l.next.RoundTrip(req)
		if err != nil || !lose {
			return resp, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": []string{"application/json"}}, Request: req,
			Body: io.NopCloser(bytes.NewBufferString(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`))}, nil
	}
	resp, err := l.next.RoundTrip(req)
	if err == nil && req.URL.Query().Get("watch") == "true" {
		l.mu.Lock()
		cut := l.cuts < l.maxCuts
		if cut {
			l.cuts++
		}
		after := time.Duration(1000+l.rnd.Intn(2000)) * time.Millisecond
		l.mu.Unlock()
		if cut {
			resp.Body = &cutBody{ReadCloser: resp.Body, at: time.Now().Add(after)}
		}
	}
	return resp, err
}

// cutBody ends a watch's stream at a given time, as a dropped connection.
type cutBody struct {
	io.ReadCloser
	at time.Time
}

func (c *cutBody) Read(p []byte) (int, error) {
	if time.Now().After(c.at) {
		_ = c.Close()
		return 0, io.ErrUnexpectedEOF
	}
	return c.ReadCloser.Read(p)
}

// Lost answers and deletions leak nothing: 60 slices of 1 CPU against 10,
// 4 workers, 30% of the controller's status patches applied but answered
// 503, watches cut, 30 slices deleted over 6 s. At the end the 30 left are
// admitted up to the total, and never more is granted than the budget.
func TestQuotaLostAnswersAndDeletions(t *testing.T) {
	cp.Require(t)
	ns := testkit.Namespace(t, cp, "quota-lost")
	w := grantwatch.Watch(t, cp.Config, cp.Scheme, ns, "10")
	b := mustBudget(t, "10")
	lossy := &lossyTransport{share: 0.3, rnd: rand.New(rand.NewSource(time.Now().UnixNano())), maxCuts: 3}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { lossy.next = rt; return lossy }
	testkit.StartManagerWith(t, cfg, testkit.ManagerOptions(t, cp.Scheme), func(mgr manager.Manager) error {
		if err := withLiqoQuotas(mgr); err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, "quota-lost", accept("Granted", nil), resourceslice.WithBudget(b),
			resourceslice.WithMaxConcurrentReconciles(4), fastBackoff())
	})

	const n = 60
	for i := range n {
		create(t, cpuSlice(ns, fmt.Sprintf("s%02d", i), "quota-lost", 1))
	}
	testkit.Eventually(t, "10 slices Accepted", func() bool {
		held, _ := heldByAccepted(t, ns, "quota-lost")
		return held.Cmp(resource.MustParse("10")) == 0
	})
	// Delete 30 slices over 6 s, Accepted ones among them.
	for i := 0; i < n; i += 2 {
		require.NoError(t, cp.Client.Delete(context.Background(), get(t, ns, fmt.Sprintf("s%02d", i))))
		time.Sleep(200 * time.Millisecond)
	}
	testkit.Eventually(t, "the 30 slices left hold exactly the 10 CPU of the budget", func() bool {
		held, items := heldByAccepted(t, ns, "quota-lost")
		return len(items) == n/2 && held.Cmp(resource.MustParse("10")) == 0
	})
	testkit.Eventually(t, "the budget counts exactly what is granted", func() bool {
		used := usedCPU(b)
		return used.Cmp(resource.MustParse("10")) == 0
	})
	lossy.mu.Lock()
	t.Logf("answers lost: %d, watches cut: %d", lossy.lost, lossy.cuts)
	lossy.mu.Unlock()
	w.Check(t)
}
