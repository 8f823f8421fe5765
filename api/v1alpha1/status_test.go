package v1alpha1_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// fullStatus is a status with every field set, as a manager serving the
// budget writes it.
func fullStatus() v1alpha1.SliceBudgetStatus {
	return v1alpha1.SliceBudgetStatus{
		Capacity:   list("cpu", "64", "memory", "256Gi"),
		Used:       list("cpu", "58", "memory", "200Gi"),
		InUse:      list("cpu", "41500m", "memory", "150Gi"),
		Reclaiming: list("cpu", "2", "memory", "0"),
		Available:  list("cpu", "6", "memory", "56Gi"),
		Accepted:   12,
		Waiting:    3,
		Consumers: []v1alpha1.ConsumerStatus{
			{Name: "acme", Used: list("cpu", "40", "memory", "128Gi"), Waiting: 2},
			{Name: "globex", Used: list("cpu", "18", "memory", "72Gi"), Waiting: 1},
		},
		Conditions: []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionTrue, Reason: "Serving", Message: "counted by the leader",
			ObservedGeneration: 1, LastTransitionTime: metav1.Date(2026, time.November, 26, 15, 4, 5, 0, time.UTC),
		}},
		ObservedGeneration: 1,
	}
}

// newBudget is a valid SliceBudget over a fixed total.
func newBudget(name string) *v1alpha1.SliceBudget {
	return &v1alpha1.SliceBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SliceBudgetSpec{Total: quantities("cpu", "64", "memory", "256Gi"),
			Preemption: &v1alpha1.SliceBudgetPreemption{WithinBudget: v1alpha1.PreemptionLowerPriority}},
	}
}

// The status is a subresource: created or updated with the object it is
// dropped, written through /status it round-trips whole, and a status
// write leaves the spec alone.
func TestStatusSubresource(t *testing.T) {
	c := server(t)
	sb := newBudget("status")
	sb.Status = fullStatus()
	require.NoError(t, c.Create(t.Context(), sb))
	cleanup(t, c, sb)
	assert.Empty(t, cmp.Diff(v1alpha1.SliceBudgetStatus{}, sb.Status, byValue), "a create stores no status")

	sb.Status = fullStatus()
	require.NoError(t, c.Status().Update(t.Context(), sb))
	var got v1alpha1.SliceBudget
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(sb), &got))
	if diff := cmp.Diff(fullStatus(), got.Status, byValue); diff != "" {
		t.Errorf("status read back (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(newBudget("").Spec, got.Spec, byValue); diff != "" {
		t.Errorf("spec after a status write (-want +got):\n%s", diff)
	}

	got.Spec.Preemption.WithinBudget = v1alpha1.PreemptionNever
	got.Status.Accepted = 99
	require.NoError(t, c.Update(t.Context(), &got))
	assert.Equal(t, int32(12), got.Status.Accepted, "an update of the object keeps the status")
	assert.Equal(t, v1alpha1.PreemptionNever, got.Spec.Preemption.WithinBudget)
	assert.Equal(t, int64(2), got.Generation, "a spec change is a new generation")
}

// Consumers is bounded at MaxConsumers: a longer list is refused, so a
// status never grows with the number of consumers.
func TestStatusConsumersBounded(t *testing.T) {
	c := server(t)
	sb := newBudget("consumers")
	require.NoError(t, c.Create(t.Context(), sb))
	cleanup(t, c, sb)

	for _, tc := range []struct {
		n     int
		valid bool
	}{{v1alpha1.MaxConsumers, true}, {v1alpha1.MaxConsumers + 1, false}} {
		sb.Status = v1alpha1.SliceBudgetStatus{}
		for i := range tc.n {
			sb.Status.Consumers = append(sb.Status.Consumers, v1alpha1.ConsumerStatus{Name: fmt.Sprintf("c%d", i), Used: list("cpu", "1")})
		}
		err := c.Status().Update(t.Context(), sb)
		if tc.valid {
			require.NoError(t, err, "%d consumers", tc.n)
			continue
		}
		require.Error(t, err, "%d consumers", tc.n)
		assert.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), "status.consumers")
	}
}

// Accepted and Waiting are required in the status, as the manager always
// writes them (issue 44: the schema says what is true): a status that
// drops one is refused, and a status written with both, even at 0, is
// stored.
func TestStatusCountsRequired(t *testing.T) {
	c := server(t)
	sb := newBudget("counts")
	require.NoError(t, c.Create(t.Context(), sb))
	cleanup(t, c, sb)
	require.NoError(t, c.Status().Update(t.Context(), sb), "a status of zeros: accepted 0 and waiting 0 are written")

	for _, field := range []string{"accepted", "waiting"} {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"`+field+`":null}}`))
		err := c.Status().Patch(t.Context(), sb.DeepCopy(), patch)
		require.Error(t, err, "a status without %s", field)
		assert.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), "status."+field)
		assert.Contains(t, err.Error(), "Required value")
	}
}
