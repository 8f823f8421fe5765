package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// The harness runs what production runs (issue 28): each scenario below is
// played twice, on the harness (slicetest.New with WithAnotherClass, the steps
// made through Harness.Client, ReconcilePending after each) and on the
// control plane (a manager with the same classes through AddToManager and
// Liqo's QuotaCreator beside them, the steps made through the API server,
// waiting after each until every slice is decided), and the two must end
// with the same decision for every slice: the Resources condition's status
// and reason, and the CPU granted.

// parityClass is a class of a scenario, all drawing from the scenario's
// budget.
type parityClass struct {
	name     string
	priority int32
}

// parityStep changes the world of a scenario in namespace ns through c.
type parityStep struct {
	what string
	do   func(ctx context.Context, c client.Client, ns, consumer string) error
}

type parityScenario struct {
	name       string
	classes    []parityClass // the first is the harness's New class
	total      string
	preemption bool
	steps      []parityStep
	// want is what both must end with: slice name -> "Status/Reason cpu".
	want map[string]string
}

func parityCreate(name, class, cpu string) parityStep {
	return parityStep{
		what: fmt.Sprintf("create %s (%s, %s CPU)", name, class, cpu),
		do: func(ctx context.Context, c client.Client, ns, consumer string) error {
			return slicetest.CreateAsLiqo(ctx, c, slicetest.NewSlice(name, slicetest.WithNamespace(ns), slicetest.WithConsumer(consumer),
				slicetest.WithClass(class), slicetest.WithRequest(corev1.ResourceCPU, cpu)))
		},
	}
}

func parityDelete(name string) parityStep {
	return parityStep{
		what: "delete " + name,
		do: func(ctx context.Context, c client.Client, ns, _ string) error {
			return c.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: slicetest.NewSlice(name, slicetest.WithNamespace(ns)).ObjectMeta})
		},
	}
}

func paritySetTenant(condition authv1beta1.TenantCondition) parityStep {
	return parityStep{
		what: "the consumer's Tenant " + string(condition),
		do: func(ctx context.Context, c client.Client, ns, consumer string) error {
			return envkit.SetTenantCondition(ctx, c, types.NamespacedName{Namespace: ns, Name: consumer}, condition)
		},
	}
}

func paritySc() []parityScenario {
	return []parityScenario{{
		name:    "shared budget counts the other class",
		classes: []parityClass{{name: "pa-gold"}, {name: "pa-silver"}},
		total:   "10",
		steps:   []parityStep{parityCreate("silver", "pa-silver", "8"), parityCreate("gold", "pa-gold", "4")},
		want:    map[string]string{"silver": "Accepted/Granted 8", "gold": "Denied/" + budget.ReasonExhausted + " 0"},
	}, {
		name:    "a release of one class admits the other's waiter",
		classes: []parityClass{{name: "pb-gold"}, {name: "pb-silver"}},
		total:   "10",
		steps:   []parityStep{parityCreate("silver", "pb-silver", "8"), parityCreate("gold", "pb-gold", "4"), parityDelete("silver")},
		want:    map[string]string{"gold": "Accepted/Granted 4"},
	}, {
		name:       "reclaim by priority",
		classes:    []parityClass{{name: "pc-gold", priority: 10}, {name: "pc-spot"}},
		total:      "10",
		preemption: true,
		steps:      []parityStep{parityCreate("spot", "pc-spot", "8"), parityCreate("gold", "pc-gold", "6")},
		want:       map[string]string{"spot": "Accepted/" + budget.ReasonReclaimed + " 4", "gold": "Accepted/Granted 6"},
	}, {
		name:       "equal priorities do not reclaim",
		classes:    []parityClass{{name: "pd-gold"}, {name: "pd-spot"}},
		total:      "10",
		preemption: true,
		steps:      []parityStep{parityCreate("spot", "pd-spot", "8"), parityCreate("gold", "pd-gold", "6")},
		want:       map[string]string{"spot": "Accepted/Granted 8", "gold": "Denied/" + budget.ReasonExhausted + " 0"},
	}, {
		name:    "a drained tenant's slices are denied, whatever the class",
		classes: []parityClass{{name: "pe-gold"}, {name: "pe-silver"}},
		total:   "10",
		steps: []parityStep{parityCreate("gold", "pe-gold", "2"), paritySetTenant(authv1beta1.TenantConditionDrained),
			parityCreate("silver", "pe-silver", "2")},
		// A Deny after an Accept keeps the offer (Liqo keeps the Quota).
		want: map[string]string{"gold": "Denied/TenantDrained 2", "silver": "Denied/TenantDrained 0"},
	}}
}

// TestHarnessDecidesAsTheControlPlane plays each scenario on the harness
// and on the control plane and compares the decisions.
func TestHarnessDecidesAsTheControlPlane(t *testing.T) {
	cp.Require(t)
	for i, sc := range paritySc() {
		t.Run(sc.name, func(t *testing.T) {
			consumer := fmt.Sprintf("parity-%d", i)
			onHarness := playOnHarness(t, sc, consumer)
			onServer := playOnControlPlane(t, sc, consumer, onHarness)
			require.Equal(t, onServer, onHarness, "the harness decides as the control plane (-server +harness)")
			require.Equal(t, sc.want, onHarness, "the decisions the scenario is about")
		})
	}
}

func (sc parityScenario) budget(t *testing.T) *budget.Budget {
	t.Helper()
	var opts []budget.Option
	if sc.preemption {
		opts = append(opts, budget.WithPreemption())
	}
	b, err := budget.New(strings.ReplaceAll(sc.name, " ", "-"), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(sc.total)}, opts...)
	require.NoError(t, err)
	return b
}

func (c parityClass) options(b *budget.Budget) []resourceslice.DecisionOption {
	return []resourceslice.DecisionOption{resourceslice.WithBudget(b), resourceslice.WithPriority(c.priority)}
}

func playOnHarness(t *testing.T, sc parityScenario, consumer string) map[string]string {
	t.Helper()
	ctx := context.Background()
	b := sc.budget(t)
	var opts []slicetest.Option
	for _, c := range sc.classes[1:] {
		opts = append(opts, slicetest.WithAnotherClass(c.name, accept("Granted", nil), c.options(b)...))
	}
	opts = append(opts, slicetest.WithReconcilerOptions(sc.classes[0].options(b)...))
	h := slicetest.New(t, sc.classes[0].name, accept("Granted", nil), opts...)
	ns, err := envkit.CreateConsumer(ctx, h.Client, consumer)
	require.NoError(t, err)
	h.ReconcilePending()
	for _, s := range sc.steps {
		require.NoError(t, s.do(ctx, h.Client, ns, consumer), s.what)
		for _, r := range h.ReconcilePending() {
			require.NoError(t, r.Err, "harness, after %s", s.what)
		}
	}
	return parityDecisions(t, h.Client, ns)
}

// playOnControlPlane plays sc on the control plane and returns the
// decisions once they equal the harness's (or after a minute, whatever
// they are then), and stay so for a second.
func playOnControlPlane(t *testing.T, sc parityScenario, consumer string, harness map[string]string) map[string]string {
	t.Helper()
	ctx := context.Background()
	b := sc.budget(t)
	ns, err := envkit.CreateConsumer(ctx, cp.Client, consumer)
	require.NoError(t, err)
	envkit.StartManager(t, cp, func(mgr manager.Manager) error {
		if err := envkit.AddLiqoQuotaCreator(mgr); err != nil {
			return err
		}
		for _, c := range sc.classes {
			var opts []resourceslice.Option
			for _, o := range c.options(b) {
				opts = append(opts, o)
			}
			if err := resourceslice.AddToManager(mgr, c.name, accept("Granted", nil), opts...); err != nil {
				return err
			}
		}
		return nil
	})
	for _, s := range sc.steps {
		require.NoError(t, s.do(ctx, cp.Client, ns, consumer), s.what)
		envkit.Eventually(t, "every slice decided after "+s.what, func() bool {
			return parityAllDecided(t, cp.Client, ns)
		})
	}
	var got map[string]string
	deadline := time.Now().Add(testwait.Timeout)
	for {
		got = parityDecisions(t, cp.Client, ns)
		if parityEqual(got, harness) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	testwait.Every(50*time.Millisecond).Consistently(t, time.Second, "the control plane's decisions stay", func() bool {
		return parityEqual(parityDecisions(t, cp.Client, ns), got)
	})
	return got
}

func parityEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// decisionsIn reads every slice in ns as "Status/Reason cpu".
func parityDecisions(t *testing.T, c client.Reader, ns string) map[string]string {
	t.Helper()
	var list authv1beta1.ResourceSliceList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace(ns)))
	out := map[string]string{}
	for i := range list.Items {
		rs := &list.Items[i]
		if rs.DeletionTimestamp != nil {
			continue
		}
		d := "undecided"
		if cond := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources); cond != nil {
			d = string(cond.Status) + "/" + cond.Reason
		}
		out[rs.Name] = d + " " + rs.Status.Resources.Cpu().String()
	}
	return out
}

func parityAllDecided(t *testing.T, c client.Reader, ns string) bool {
	for _, d := range parityDecisions(t, c, ns) {
		if strings.HasPrefix(d, "undecided") {
			return false
		}
	}
	return true
}
