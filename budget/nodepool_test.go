package budget_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

func selector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	require.NoError(t, err)
	return sel
}

func TestNewNodePool(t *testing.T) {
	mgr := envkit.UnreachableManager(t)
	cases := map[string]struct {
		reason    string
		mgr       manager.Manager
		nodes     labels.Selector
		opts      []budget.NodePoolOption
		wantErr   string
		wantTotal corev1.ResourceList
	}{
		"Defaults": {
			reason: "cpu, memory and pods, zero until the nodes are seen.",
			mgr:    mgr, nodes: labels.Everything(),
			wantTotal: list("cpu", "0", "memory", "0", "pods", "0"),
		},
		"WithResources": {
			reason: "WithResources names exactly the resources limited.",
			mgr:    mgr, nodes: selector(t, "pool=gpu"),
			opts:      []budget.NodePoolOption{budget.WithResources("nvidia.com/gpu"), budget.WithSharePercent(50), budget.WithReserve(list("nvidia.com/gpu", "1")), budget.WithLocalPods(), budget.WithConsumerLimit(list("nvidia.com/gpu", "2")), budget.WithOldestFirst()},
			wantTotal: list("nvidia.com/gpu", "0"),
		},
		"NilManager": {
			reason: "No manager, no cache.",
			nodes:  labels.Everything(), wantErr: `budget "pool": nil manager`,
		},
		"NilSelector": {
			reason: "A nil selector is refused, saying how to select every node.",
			mgr:    mgr, wantErr: `budget "pool": nil node selector; use labels.Everything()`,
		},
		"ShareZero": {
			reason: "A share is 1–100.",
			mgr:    mgr, nodes: labels.Everything(), opts: []budget.NodePoolOption{budget.WithSharePercent(0)},
			wantErr: `budget "pool": share percent 0 is not within 1–100`,
		},
		"ShareOver100": {
			reason: "A share is 1–100.",
			mgr:    mgr, nodes: labels.Everything(), opts: []budget.NodePoolOption{budget.WithSharePercent(101)},
			wantErr: `budget "pool": share percent 101 is not within 1–100`,
		},
		"ShareNegative": {
			reason: "A share is 1–100.",
			mgr:    mgr, nodes: labels.Everything(), opts: []budget.NodePoolOption{budget.WithSharePercent(-5)},
			wantErr: "share percent -5",
		},
		"NegativeReserve": {
			reason: "A negative reserve would add capacity: refused, naming it.",
			mgr:    mgr, nodes: labels.Everything(), opts: []budget.NodePoolOption{budget.WithReserve(list("cpu", "-1"))},
			wantErr: `budget "pool": negative reserve cpu=-1`,
		},
		"EmptyResources": {
			reason: "A pool limiting nothing is refused.",
			mgr:    mgr, nodes: labels.Everything(), opts: []budget.NodePoolOption{budget.WithResources()},
			wantErr: `budget "pool": WithResources names no resource`,
		},
		"EmptyConsumerLimit": {
			reason: "WithConsumerLimit applies to node pools too, and is validated there.",
			mgr:    mgr, nodes: labels.Everything(), opts: []budget.NodePoolOption{budget.WithConsumerLimit(nil)},
			wantErr: `budget "pool": empty consumer limit`,
		},
		"SeveralErrors": {
			reason: "Every bad option is reported.",
			mgr:    mgr, nodes: labels.Everything(), opts: []budget.NodePoolOption{budget.WithSharePercent(0), budget.WithResources()},
			wantErr: "share percent 0 is not within 1–100\nWithResources names no resource",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := budget.NewNodePool(tc.mgr, "pool", tc.nodes, tc.opts...)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				assert.Nil(t, b)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, "pool", b.Name())
			assert.Empty(t, cmp.Diff(tc.wantTotal, b.Total(), byValue), "%s\ntotal (-want +got)", tc.reason)
		})
	}
}

func TestNodePoolSetTotal(t *testing.T) {
	b, err := budget.NewNodePool(envkit.UnreachableManager(t), "gpu", labels.Everything(), budget.WithResources("nvidia.com/gpu"))
	require.NoError(t, err)
	err = b.SetTotal(list("nvidia.com/gpu", "8"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `budget "gpu" follows its nodes`)
	assert.Empty(t, cmp.Diff(list("nvidia.com/gpu", "0"), b.Total(), byValue), "the total is unchanged (-want +got)")
}

func TestPin(t *testing.T) {
	cases := map[string]struct {
		reason       string
		selector     string // "" for a budget that is not a node pool
		before       authv1beta1.ResourceSliceStatus
		wantErr      string
		wantSelector map[string]string
		wantLabels   map[string]string
	}{
		"KeyValue": {
			reason:       "Each key=value term goes to nodeSelector and nodeLabels.",
			selector:     "pool=gpu,zone==a",
			wantSelector: map[string]string{"pool": "gpu", "zone": "a"},
			wantLabels:   map[string]string{"pool": "gpu", "zone": "a"},
		},
		"InOneValue": {
			reason:       "'in' with a single value is key=value.",
			selector:     "pool in (gpu)",
			wantSelector: map[string]string{"pool": "gpu"},
			wantLabels:   map[string]string{"pool": "gpu"},
		},
		"Merged": {
			reason:   "Entries already set are kept; the pool's own key wins.",
			selector: "pool=gpu",
			before: authv1beta1.ResourceSliceStatus{
				NodeSelector: map[string]string{"team": "x", "pool": "cpu"},
				NodeLabels:   map[string]string{"region": "eu"},
			},
			wantSelector: map[string]string{"team": "x", "pool": "gpu"},
			wantLabels:   map[string]string{"region": "eu", "pool": "gpu"},
		},
		"NotEquals": {
			reason:   "A nodeSelector cannot express !=: the term is named.",
			selector: "pool=gpu,zone!=b", wantErr: `budget "pool": its node selector term "zone!=b" is not key=value`,
		},
		"InSeveral": {
			reason:   "A nodeSelector cannot express a choice.",
			selector: "pool in (a,b)", wantErr: `term "pool in (a,b)" is not key=value`,
		},
		"Exists": {
			reason:   "A nodeSelector cannot express existence.",
			selector: "gpu", wantErr: `term "gpu" is not key=value`,
		},
		"NotExists": {
			reason:   "Nor absence.",
			selector: "!spot", wantErr: `term "!spot" is not key=value`,
		},
		"NotAPool": {
			reason:  "Only a node pool has nodes to pin to.",
			wantErr: `budget "pool" is not a node pool`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b *budget.Budget
			var err error
			if tc.selector == "" {
				b, err = budget.New("pool", list("cpu", "1"))
			} else {
				b, err = budget.NewNodePool(envkit.UnreachableManager(t), "pool", selector(t, tc.selector))
			}
			require.NoError(t, err)
			rs := &authv1beta1.ResourceSlice{Status: *tc.before.DeepCopy()}

			err = b.PinToNodePool(rs)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				assert.Empty(t, cmp.Diff(tc.before, rs.Status), "%s\na failed PinToNodePool changes nothing (-want +got)", tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Empty(t, cmp.Diff(tc.wantSelector, rs.Status.NodeSelector), "%s\nnodeSelector (-want +got)", tc.reason)
			assert.Empty(t, cmp.Diff(tc.wantLabels, rs.Status.NodeLabels), "%s\nnodeLabels (-want +got)", tc.reason)
		})
	}
}

func TestPinSelectsNothing(t *testing.T) {
	b, err := budget.NewNodePool(envkit.UnreachableManager(t), "pool", labels.Nothing())
	require.NoError(t, err)
	err = b.PinToNodePool(&authv1beta1.ResourceSlice{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "selects nothing")
}
