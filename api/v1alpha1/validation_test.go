package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
)

// raw is a SliceBudget as a user writes it, in JSON, spec as given: what
// kubectl sends, which the typed Go API cannot express (a malformed
// quantity, an integer where a string is usual).
func raw(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("SliceBudget"))
	u.SetName(name)
	return u
}

// validSpec is the spec the update cases start from.
func validSpec() map[string]any {
	return map[string]any{"total": map[string]any{"cpu": "8", "memory": "16Gi"}}
}

// override is an entry of spec.consumerLimits.
func override(consumer string, limits map[string]any) map[string]any {
	return map[string]any{"consumer": consumer, "limits": limits}
}

// invalidSpecs are specs the API server must refuse, each with what the
// error must say: the field and the rule broken.
func invalidSpecs() map[string]struct {
	reason string
	spec   map[string]any
	want   []string
} {
	pool := map[string]any{"selector": map[string]any{}}
	return map[string]struct {
		reason string
		spec   map[string]any
		want   []string
	}{
		"NegativeTotal": {
			reason: "a negative capacity would let a budget admit less than nothing and break its books",
			spec:   map[string]any{"total": map[string]any{"cpu": "-1", "memory": "16Gi"}},
			want:   []string{"spec.total", "quantities must not be negative"},
		},
		"NegativeIntegerTotal": {
			reason: "kubectl sends cpu: -2 as a JSON integer: the rule covers both forms of a quantity",
			spec:   map[string]any{"total": map[string]any{"cpu": int64(-2)}},
			want:   []string{"spec.total", "quantities must not be negative"},
		},
		"UnknownResourceName": {
			reason: "cpus is neither a standard resource name nor domain-qualified: a budget limits only what it names, so it would leave CPU unlimited",
			spec:   map[string]any{"total": map[string]any{"cpus": "2"}},
			want:   []string{"spec.total", "resource names must be standard (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>) or domain-qualified"},
		},
		"UnknownResourceNameInOverride": {
			reason: "a consumer's override is checked as the budget's total is",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override("acme", map[string]any{"gpu": "1"}),
			}},
			want: []string{"spec.consumerLimits[0].limits", "resource names must be standard"},
		},
		"UnknownPoolResource": {
			reason: "a node pool's resources follow the same rule",
			spec:   map[string]any{"nodePool": map[string]any{"selector": map[string]any{}, "resources": []any{"cpu", "mem"}}},
			want:   []string{"spec.nodePool.resources", "resource names must be standard"},
		},
		"GarbageQuantity": {
			reason: "a quantity that does not parse could not be decoded by any client",
			spec:   map[string]any{"total": map[string]any{"cpu": "lots"}},
			want:   []string{"spec.total.cpu", "should match"},
		},
		"DecimalExponent": {
			reason: "1e1.5 passes controller-gen's quantity pattern but not Go's parser: stored, it would make the object undecodable",
			spec:   map[string]any{"total": map[string]any{"cpu": "1e1.5"}},
			want:   []string{"spec.total.cpu", "should match"},
		},
		"HugeExponent": {
			reason: "an exponent past int64 passes controller-gen's pattern but not Go's parser",
			spec:   map[string]any{"total": map[string]any{"memory": "1e99999999999999999999"}},
			want:   []string{"spec.total.memory", "should match"},
		},
		"SlowExponent": {
			reason: "an 8-digit exponent parses, but takes Go seconds to minutes in every client that decodes the budget",
			spec:   map[string]any{"total": map[string]any{"memory": "1e-99999999"}},
			want:   []string{"spec.total.memory", "should match"},
		},
		"LongQuantity": {
			reason: "a quantity is short; a bound keeps the rules' cost within the API server's budget",
			spec:   map[string]any{"total": map[string]any{"cpu": strings.Repeat("9", 65)}},
			want:   []string{"spec.total.cpu", "may not be more than 64 bytes"},
		},
		"BadResourceName": {
			reason: "a resource name no node can have is a typo that would admit none of it",
			spec:   map[string]any{"total": map[string]any{"cpu!": "1"}},
			want:   []string{"spec.total", "resource names must be qualified names"},
		},
		"EmptyTotal": {
			reason: "an empty total limits nothing, which budget.New refuses too",
			spec:   map[string]any{"total": map[string]any{}},
			want:   []string{"spec.total", "at least 1"},
		},
		"TotalAndNodePool": {
			reason: "a budget offers a fixed total or what its nodes have, not both",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "nodePool": pool},
			want:   []string{"spec", "exactly one of total and nodePool"},
		},
		"Neither": {
			reason: "a budget with no capacity at all is a mistake, not a budget of nothing",
			spec:   map[string]any{"preemption": map[string]any{"withinBudget": "LowerPriority"}},
			want:   []string{"spec", "exactly one of total and nodePool"},
		},
		"NegativeConsumerLimit": {
			reason: "a negative limit per consumer would break the consumer's books",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimit": map[string]any{"cpu": "-500m"}},
			want:   []string{"spec.consumerLimit", "quantities must not be negative"},
		},
		"EmptyConsumerLimit": {
			reason: "an empty consumer limit limits nothing, which budget.WithConsumerLimit refuses",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimit": map[string]any{}},
			want:   []string{"spec.consumerLimit", "at least 1"},
		},
		"NegativeConsumerLimitsOverride": {
			reason: "an override is a consumer limit too; the error names the entry",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override("acme", map[string]any{"cpu": "2"}), override("globex", map[string]any{"cpu": "-1"}),
			}},
			want: []string{"spec.consumerLimits[1].limits", "quantities must not be negative"},
		},
		"GarbageConsumerLimitsOverride": {
			reason: "the quantity format is checked inside the list's entries too",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override("acme", map[string]any{"memory": "1 GB"}),
			}},
			want: []string{"spec.consumerLimits[0].limits.memory", "should match"},
		},
		"DecimalExponentOverride": {
			reason: "Go's parser is checked inside the list's entries too",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override("acme", map[string]any{"cpu": "2e0.5"}),
			}},
			want: []string{"spec.consumerLimits[0].limits.cpu", "should match"},
		},
		"EmptyConsumerLimitsOverride": {
			reason: "an empty override is ambiguous (no limit, or the default?): removing the entry says the latter",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override("acme", map[string]any{}),
			}},
			want: []string{"spec.consumerLimits[0].limits", "an override names at least one resource"},
		},
		"OverrideWithoutLimits": {
			reason: "an entry with no limits at all is the empty override",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				map[string]any{"consumer": "acme"},
			}},
			want: []string{"spec.consumerLimits[0].limits", "Required value"},
		},
		"OverrideWithoutConsumer": {
			reason: "an override is for one consumer, named",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				map[string]any{"limits": map[string]any{"cpu": "1"}},
			}},
			want: []string{"spec.consumerLimits[0].consumer", "Required value"},
		},
		"EmptyConsumer": {
			reason: "no consumer is called \"\": the ledger refuses an empty consumer",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override("", map[string]any{"cpu": "1"}),
			}},
			want: []string{"spec.consumerLimits[0].consumer", "at least 1 chars long"},
		},
		"LongConsumer": {
			reason: "a cluster ID or a namespace is at most 253 characters long",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override(strings.Repeat("a", 254), map[string]any{"cpu": "1"}),
			}},
			want: []string{"spec.consumerLimits[0].consumer", "may not be more than 253"},
		},
		"DuplicateConsumer": {
			reason: "two overrides for one consumer: which one holds? (listType=map keys the list by consumer)",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": []any{
				override("acme", map[string]any{"cpu": "1"}), override("acme", map[string]any{"cpu": "2"}),
			}},
			want: []string{"spec.consumerLimits[1]", "Duplicate value"},
		},
		"ConsumerLimitsAsMap": {
			reason: "the map keyed by cluster ID before issue 44 is no longer the field's shape",
			spec: map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": map[string]any{
				"acme": map[string]any{"cpu": "2"},
			}},
			want: []string{"spec.consumerLimits", "must be of type array"},
		},
		"NegativeEvictionAfterSeconds": {
			reason: "budget.WithEvictionAfter refuses d < 0; 0 evicts at once",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "evictionAfterSeconds": int64(-300)},
			want:   []string{"spec.evictionAfterSeconds", "greater than or equal to 0"},
		},
		"EvictionAfterSecondsAsDuration": {
			reason: "a count of seconds, not a duration string: 10m would not decode",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "evictionAfterSeconds": "10m"},
			want:   []string{"spec.evictionAfterSeconds", "must be of type integer"},
		},
		"EvictionAfterSecondsPastInt32": {
			reason: "a count past int32 would make the object undecodable by the manager",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "evictionAfterSeconds": int64(1) << 31},
			want:   []string{"spec.evictionAfterSeconds", "less than or equal to 2147483647"},
		},
		"PreemptionAsBool": {
			reason: "preemption: true before issue 44 is now a policy object: true says which policy?",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "preemption": true},
			want:   []string{"spec.preemption", "must be of type object"},
		},
		"UnknownPreemptionPolicy": {
			reason: "a policy the manager does not know would be read as Never, silently",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "preemption": map[string]any{"withinBudget": "Always"}},
			want:   []string{"spec.preemption.withinBudget", "Unsupported value", "Never", "LowerPriority"},
		},
		"BorrowingLimitWithoutCohort": {
			reason: "a borrowing limit outside a cohort would borrow from no one, silently",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "borrowingLimit": map[string]any{"cpu": "4"}},
			want:   []string{"spec", "need a cohort"},
		},
		"ReclaimWithinCohortWithoutCohort": {
			reason: "taking back what was lent needs a cohort to have lent to",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "preemption": map[string]any{"reclaimWithinCohort": "Any"}},
			want:   []string{"spec", "need a cohort"},
		},
		"LendingLimitOfAnotherResource": {
			reason: "a budget lends only what it limits",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "cohort": "pool", "lendingLimit": map[string]any{"memory": "1Gi"}},
			want:   []string{"spec", "lendingLimit names only resources of total"},
		},
		"BorrowingLimitOfAnotherResource": {
			reason: "a budget borrows only what it limits",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "cohort": "pool", "borrowingLimit": map[string]any{"memory": "1Gi"}},
			want:   []string{"spec", "borrowingLimit names only resources of total"},
		},
		"NegativeBorrowingLimit": {
			reason: "a negative limit would break the cohort's books",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "cohort": "pool", "borrowingLimit": map[string]any{"cpu": "-1"}},
			want:   []string{"spec.borrowingLimit", "quantities must not be negative"},
		},
		"BadCohortName": {
			reason: "a cohort is named as a label value is: lower case, no spaces",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "cohort": "Gold Pool"},
			want:   []string{"spec.cohort", "should match"},
		},
		"UnknownReclaimWithinCohort": {
			reason: "a policy the manager does not know would be read as Never, silently",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "cohort": "pool", "preemption": map[string]any{"reclaimWithinCohort": "Always"}},
			want:   []string{"spec.preemption.reclaimWithinCohort", "Unsupported value", "Never", "LowerPriority", "Any"},
		},
		"NodePoolWithoutSelector": {
			reason: "budget.NewNodePool refuses a nil selector; {} says every node explicitly",
			spec:   map[string]any{"nodePool": map[string]any{"sharePercent": int64(50)}},
			want:   []string{"spec.nodePool.selector", "Required value"},
		},
		"SharePercentZero": {
			reason: "budget.WithSharePercent takes 1–100",
			spec:   map[string]any{"nodePool": map[string]any{"selector": map[string]any{}, "sharePercent": int64(0)}},
			want:   []string{"spec.nodePool.sharePercent", "greater than or equal to 1"},
		},
		"SharePercentAbove100": {
			reason: "a pool cannot offer more than it has",
			spec:   map[string]any{"nodePool": map[string]any{"selector": map[string]any{}, "sharePercent": int64(150)}},
			want:   []string{"spec.nodePool.sharePercent", "less than or equal to 100"},
		},
		"NegativeReserve": {
			reason: "budget.NewNodePool refuses a negative reserve",
			spec:   map[string]any{"nodePool": map[string]any{"selector": map[string]any{}, "reserve": map[string]any{"memory": "-1Gi"}}},
			want:   []string{"spec.nodePool.reserve", "quantities must not be negative"},
		},
		"BadPoolResource": {
			reason: "the pool's resources are resource names",
			spec:   map[string]any{"nodePool": map[string]any{"selector": map[string]any{}, "resources": []any{"cpu", "GPU s"}}},
			want:   []string{"spec.nodePool.resources", "resource names must be qualified names"},
		},
		"BadSelectorOperator": {
			reason: "a selector the manager cannot parse would leave the budget without nodes",
			spec: map[string]any{"nodePool": map[string]any{"selector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "pool", "operator": "Equals", "values": []any{"gpu"}},
			}}}},
			want: []string{"spec.nodePool.selector.matchExpressions[0].operator", "Unsupported value"},
		},
		"InWithoutValues": {
			reason: "In with no values selects nothing: labels.Selector refuses it",
			spec: map[string]any{"nodePool": map[string]any{"selector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "pool", "operator": "In"},
			}}}},
			want: []string{"spec.nodePool.selector.matchExpressions[0]", "operators In and NotIn take values"},
		},
		"ExistsWithValues": {
			reason: "Exists with values is refused by labels.Selector",
			spec: map[string]any{"nodePool": map[string]any{"selector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "pool", "operator": "Exists", "values": []any{"gpu"}},
			}}}},
			want: []string{"spec.nodePool.selector.matchExpressions[0]", "operators In and NotIn take values"},
		},
		"BadLabelKey": {
			reason: "a label key no node can carry",
			spec: map[string]any{"nodePool": map[string]any{"selector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "-pool", "operator": "Exists"},
			}}}},
			want: []string{"spec.nodePool.selector.matchExpressions[0].key", "must be a label key"},
		},
		"BadMatchLabelsKey": {
			reason: "matchLabels keys are label keys",
			spec: map[string]any{"nodePool": map[string]any{"selector": map[string]any{
				"matchLabels": map[string]any{"pool/gpu/x": "a"},
			}}},
			want: []string{"spec.nodePool.selector.matchLabels", "keys must be label keys"},
		},
		"BadLabelValue": {
			reason: "a label value no node can carry",
			spec: map[string]any{"nodePool": map[string]any{"selector": map[string]any{
				"matchLabels": map[string]any{"pool": "gpu nodes"},
			}}},
			want: []string{"spec.nodePool.selector.matchLabels.pool", "should match"},
		},
	}
}

// Every invalid spec is refused on create, with an error naming the field
// and the rule.
func TestInvalidSpecRefusedOnCreate(t *testing.T) {
	c := server(t)
	for name, tc := range invalidSpecs() {
		t.Run(name, func(t *testing.T) {
			obj := raw("create-"+strings.ToLower(name), tc.spec)
			err := c.Create(t.Context(), obj)
			if err == nil {
				cleanup(t, c, obj)
			}
			assertInvalid(t, err, tc.reason, tc.want)
		})
	}
}

// Every invalid spec is refused on update of a valid budget too, and the
// stored spec stays as it was: nothing invalid is ever stored.
func TestInvalidSpecRefusedOnUpdate(t *testing.T) {
	c := server(t)
	for name, tc := range invalidSpecs() {
		t.Run(name, func(t *testing.T) {
			obj := raw("update-"+strings.ToLower(name), validSpec())
			require.NoError(t, c.Create(t.Context(), obj), "the valid spec")
			cleanup(t, c, obj)
			stored := runtime.DeepCopyJSONValue(obj.Object["spec"]) // with the server's defaults

			require.NoError(t, unstructured.SetNestedField(obj.Object, tc.spec, "spec"))
			assertInvalid(t, c.Update(t.Context(), obj), tc.reason, tc.want)

			got := raw(obj.GetName(), nil)
			require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(obj), got))
			if diff := cmp.Diff(stored, got.Object["spec"]); diff != "" {
				t.Errorf("%s: stored spec changed by a refused update (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// assertInvalid checks that err is the API server's Invalid answer and
// says each of want.
func assertInvalid(t *testing.T, err error, reason string, want []string) {
	t.Helper()
	require.Error(t, err, "%s: accepted", reason)
	t.Logf("refused: %v", err)
	assert.True(t, apierrors.IsInvalid(err), "%s: want Invalid, got %v", reason, err)
	for _, w := range want {
		assert.Contains(t, err.Error(), w, reason)
	}
}

// Valid specs are stored as written (the server only fills defaults:
// preemption's withinBudget Never, a node pool's share 100) and
// read back through the Go types: whatever the API server accepts, a
// manager can decode.
func TestValidSpecAccepted(t *testing.T) {
	c := server(t)
	// A manager to build node pools on, never started.
	mgr, err := manager.New(cp.Config, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	cases := map[string]struct {
		reason string
		spec   map[string]any
		// want is what the Go types read back.
		want v1alpha1.SliceBudgetSpec
	}{
		"Total": {
			reason: "a fixed total; integers and strings are both quantities, zero admits none of it",
			spec:   map[string]any{"total": map[string]any{"cpu": int64(64), "memory": "256Gi", "nvidia.com/gpu": "0"}},
			want: v1alpha1.SliceBudgetSpec{Total: quantities("cpu", "64", "memory", "256Gi", "nvidia.com/gpu", "0"),
				Preemption: preemption(v1alpha1.PreemptionNever)},
		},
		"StandardResourceNames": {
			reason: "every standard resource name a budget may limit, and quantities with suffixes and exponents, are accepted",
			spec: map[string]any{"total": map[string]any{"cpu": "500m", "memory": "1e3", "ephemeral-storage": "10Gi",
				"storage": "1Ti", "pods": int64(110), "hugepages-2Mi": "1Gi"}},
			want: v1alpha1.SliceBudgetSpec{Total: quantities("cpu", "500m", "memory", "1e3", "ephemeral-storage", "10Gi",
				"storage", "1Ti", "pods", "110", "hugepages-2Mi", "1Gi"), Preemption: preemption(v1alpha1.PreemptionNever)},
		},
		"NodePool": {
			reason: "every node-pool option budget.NewNodePool takes",
			spec: map[string]any{"nodePool": map[string]any{
				"selector": map[string]any{
					"matchLabels":      map[string]any{"pool": "gpu"},
					"matchExpressions": []any{map[string]any{"key": "zone", "operator": "NotIn", "values": []any{"edge"}}},
				},
				"resources":    []any{"cpu", "memory", "nvidia.com/gpu"},
				"sharePercent": int64(80),
				"reserve":      map[string]any{"cpu": "2"},
				"localPods":    true,
			}},
			want: v1alpha1.SliceBudgetSpec{NodePool: &v1alpha1.NodePool{
				Selector:  selector(map[string]v1alpha1.LabelValue{"pool": "gpu"}, "zone", "NotIn", "edge"),
				Resources: []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"}, SharePercent: 80,
				Reserve: quantities("cpu", "2"), LocalPods: true,
			}, Preemption: preemption(v1alpha1.PreemptionNever)},
		},
		"EveryNode": {
			reason: "selector {} is every node; the share defaults to 100",
			spec:   map[string]any{"nodePool": map[string]any{"selector": map[string]any{}}},
			want: v1alpha1.SliceBudgetSpec{NodePool: &v1alpha1.NodePool{Selector: &v1alpha1.NodeSelector{}, SharePercent: 100},
				Preemption: preemption(v1alpha1.PreemptionNever)},
		},
		"PreemptionDefaults": {
			reason: "preemption {} is withinBudget: Never, as no preemption is",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "preemption": map[string]any{}},
			want:   v1alpha1.SliceBudgetSpec{Total: quantities("cpu", "8"), Preemption: preemption(v1alpha1.PreemptionNever)},
		},
		"Limits": {
			reason: "preemption, eviction and limits per consumer, overrides included",
			spec: map[string]any{
				"total":                map[string]any{"cpu": "64"},
				"preemption":           map[string]any{"withinBudget": "LowerPriority"},
				"evictionAfterSeconds": int64(5400),
				"consumerLimit":        map[string]any{"cpu": "16"},
				"consumerLimits": []any{
					map[string]any{"consumer": "acme", "limits": map[string]any{"cpu": "32"}},
					map[string]any{"consumer": "globex", "limits": map[string]any{"cpu": "0"}},
				},
			},
			want: v1alpha1.SliceBudgetSpec{
				Total: quantities("cpu", "64"), Preemption: preemption(v1alpha1.PreemptionLowerPriority),
				EvictionAfterSeconds: ptr.To[int32](5400),
				ConsumerLimit:        quantities("cpu", "16"),
				ConsumerLimits: []v1alpha1.ConsumerLimitOverride{
					{Consumer: "acme", Limits: quantities("cpu", "32")}, {Consumer: "globex", Limits: quantities("cpu", "0")},
				},
			},
		},
		"Cohort": {
			reason: "a cohort member with every term; a lending limit may equal the total, integer or string",
			spec: map[string]any{
				"total":          map[string]any{"cpu": int64(4), "memory": "8Gi"},
				"cohort":         "pool",
				"borrowingLimit": map[string]any{"cpu": "14"},
				"lendingLimit":   map[string]any{"cpu": "4000m", "memory": int64(1024)},
				"preemption":     map[string]any{"reclaimWithinCohort": "LowerPriority"},
			},
			want: v1alpha1.SliceBudgetSpec{Total: quantities("cpu", "4", "memory", "8Gi"), Cohort: "pool",
				BorrowingLimit: quantities("cpu", "14"), LendingLimit: quantities("cpu", "4000m", "memory", "1024"),
				Preemption: &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionNever, ReclaimWithinCohort: v1alpha1.CohortReclaimLowerPriority}},
		},
		"LendingLimitAboveTotal": {
			reason: "a lending limit above the total lends all of it (quantities are not compared in CEL: Kubernetes 1.33 refuses the cost)",
			spec:   map[string]any{"total": map[string]any{"cpu": "8"}, "cohort": "pool", "lendingLimit": map[string]any{"cpu": "9"}},
			want: v1alpha1.SliceBudgetSpec{Total: quantities("cpu", "8"), Cohort: "pool", LendingLimit: quantities("cpu", "9"),
				Preemption: preemption(v1alpha1.PreemptionNever)},
		},
		"ZeroEviction": {
			reason: "0 seconds evicts as soon as a shrunk slice's pods are seen over what it keeps",
			spec:   map[string]any{"total": map[string]any{"cpu": "1"}, "evictionAfterSeconds": int64(0)},
			want: v1alpha1.SliceBudgetSpec{Total: quantities("cpu", "1"), Preemption: preemption(v1alpha1.PreemptionNever),
				EvictionAfterSeconds: ptr.To[int32](0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := raw("valid-"+strings.ToLower(name), tc.spec)
			require.NoError(t, c.Create(t.Context(), obj), tc.reason)
			cleanup(t, c, obj)
			var got v1alpha1.SliceBudget
			require.NoError(t, c.Get(t.Context(), types.NamespacedName{Name: obj.GetName()}, &got), tc.reason)
			if diff := cmp.Diff(tc.want, got.Spec, byValue); diff != "" {
				t.Errorf("%s: spec read back (-want +got):\n%s", tc.reason, diff)
			}
			require.NoError(t, budgetAccepts(mgr, got.Name, got.Spec), "%s: what the API server accepts, the budget package accepts", tc.reason)
		})
	}
}

// budgetAccepts hands spec to the budget package as a manager following
// the object would: a total with its options to budget.New and the
// overrides to SetConsumerLimit, a node pool's selector and options to
// budget.NewNodePool (on mgr, not started).
func budgetAccepts(mgr manager.Manager, name string, spec v1alpha1.SliceBudgetSpec) error {
	var opts []budget.SharedOption
	if spec.Preemption != nil && spec.Preemption.WithinBudget == v1alpha1.PreemptionLowerPriority {
		opts = append(opts, budget.WithPreemption())
	}
	if n := spec.EvictionAfterSeconds; n != nil {
		// 0 is the least delay, as FromObject applies it: WithEvictionAfter
		// takes only a positive one.
		opts = append(opts, budget.WithEvictionAfter(max(time.Duration(*n)*time.Second, time.Nanosecond)))
	}
	if spec.ConsumerLimit != nil {
		opts = append(opts, budget.WithConsumerLimit(spec.ConsumerLimit.ResourceList()))
	}
	if p := spec.NodePool; p != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.Selector.LabelSelector())
		if err != nil {
			return err
		}
		var pool []budget.NodePoolOption
		for _, o := range opts {
			pool = append(pool, o)
		}
		if p.Resources != nil {
			pool = append(pool, budget.WithResources(p.Resources...))
		}
		if p.Reserve != nil {
			pool = append(pool, budget.WithReserve(p.Reserve.ResourceList()))
		}
		if p.LocalPods {
			pool = append(pool, budget.WithLocalPods())
		}
		pool = append(pool, budget.WithSharePercent(int(p.SharePercent)))
		_, err = budget.NewNodePool(mgr, name, sel, pool...)
		return err
	}
	newOpts := make([]budget.Option, 0, len(opts))
	for _, o := range opts {
		newOpts = append(newOpts, o)
	}
	b, err := budget.New(name, spec.Total.ResourceList(), newOpts...)
	if err != nil {
		return err
	}
	for _, o := range spec.ConsumerLimits {
		if err := b.SetConsumerLimit(o.Consumer, o.Limits.ResourceList()); err != nil {
			return err
		}
	}
	return nil
}

// Bounds on lists and maps keep a CEL rule's cost within what the API
// server allows; a spec past them is refused, not half-checked.
func TestBoundsRefused(t *testing.T) {
	c := server(t)
	var limits []any
	for i := range 257 {
		limits = append(limits, override(fmt.Sprintf("consumer-%d", i), map[string]any{"cpu": "1"}))
	}
	obj := raw("too-many-consumers", map[string]any{"total": map[string]any{"cpu": "8"}, "consumerLimits": limits})
	err := c.Create(t.Context(), obj)
	if err == nil {
		cleanup(t, c, obj)
	}
	assertInvalid(t, err, "257 overrides, past maxItems 256", []string{"spec.consumerLimits", "must have at most 256 items"})
}

// The largest spec the bounds allow, 256 overrides of 32 resources each
// with consumer names of 253 characters, is accepted (the rules' runtime
// cost fits the API server's budget) and builds a budget with every
// override: the bounds refuse past them, never at them.
func TestLargestSpecAccepted(t *testing.T) {
	c := server(t)
	mgr, err := manager.New(cp.Config, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	resources := map[string]any{}
	for i := range 32 {
		resources[fmt.Sprintf("example.com/r%d", i)] = "1500m"
	}
	var limits []any
	for i := range 256 {
		consumer := fmt.Sprintf("%03d-%s", i, strings.Repeat("c", 249))
		limits = append(limits, override(consumer, resources))
	}
	obj := raw("largest", map[string]any{"total": resources, "consumerLimit": resources, "consumerLimits": limits})
	require.NoError(t, c.Create(t.Context(), obj), "the largest spec the bounds allow")
	cleanup(t, c, obj)
	var got v1alpha1.SliceBudget
	require.NoError(t, c.Get(t.Context(), types.NamespacedName{Name: obj.GetName()}, &got))
	require.Len(t, got.Spec.ConsumerLimits, 256)
	assert.Len(t, got.Spec.ConsumerLimits[255].Limits, 32)
	require.NoError(t, budgetAccepts(mgr, got.Name, got.Spec))
}
