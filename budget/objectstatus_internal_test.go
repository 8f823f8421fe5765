package budget

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

func cpuRL(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

// desiredStatus, per case: the figures of an applied spec, at most
// MaxConsumers consumers (no unnamed one), a Ready condition that keeps
// its transition time while its status holds and says why a spec is not
// applied.
func TestDesiredStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := ledger.Snapshot{Total: cpuRL("10"), Used: cpuRL("6"), InUse: cpuRL("0"), Reclaiming: cpuRL("0"), Free: cpuRL("4"),
		Accepted: 1, Waiting: 1}
	for i := range 25 {
		snap.Consumers = append(snap.Consumers, ledger.ConsumerSnapshot{Name: fmt.Sprintf("c%02d", i), Used: cpuRL("0")})
	}
	snap.Consumers[3].Name = ""
	sb := &v1alpha1.SliceBudget{}
	sb.Generation = 3
	applied := applied{read: true, generation: 3, ok: true, reason: reasonApplied, message: "spec applied: the budget admits by it"}

	st := desiredStatus(sb, applied, snap, t0)
	assert.Equal(t, int32(1), st.Accepted)
	assert.Equal(t, int32(1), st.Waiting)
	assert.Equal(t, int64(3), st.ObservedGeneration)
	assert.True(t, st.Available.Cpu().Equal(resource.MustParse("4")))
	require.Len(t, st.Consumers, v1alpha1.MaxConsumers, "bounded")
	for _, c := range st.Consumers {
		assert.NotEmpty(t, c.Name, "an unnamed consumer is not listed")
	}
	require.Len(t, st.Conditions, 1)
	assert.Equal(t, metav1.ConditionTrue, st.Conditions[0].Status)

	// Later, same status: the transition time is kept.
	sb.Status = st
	again := desiredStatus(sb, applied, snap, t0.Add(time.Hour))
	assert.True(t, again.Conditions[0].LastTransitionTime.Time.Equal(t0), "kept: %v", again.Conditions[0].LastTransitionTime)

	// A refused spec with one in force: Ready False, the figures kept.
	refused := applied
	refused.generation, refused.reason, refused.message = 4, reasonSpecRefused, "spec.total names no resource"
	st = desiredStatus(sb, refused, snap, t0.Add(time.Hour))
	assert.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, "spec.total names no resource: the last spec applied stays in force", st.Conditions[0].Message)
	assert.NotNil(t, st.Capacity)

	// None in force: no figures, and the budget admits nothing new.
	refused.ok = false
	st = desiredStatus(sb, refused, snap, t0)
	assert.Nil(t, st.Capacity)
	assert.Empty(t, st.Consumers)
	assert.Equal(t, "spec.total names no resource: the budget admits nothing new", st.Conditions[0].Message)
}

// The status patch carries the resourceVersion it was computed from, and
// accepted and waiting even at 0 (a diff would leave them out).
func TestStatusPatchWritesZeroCounts(t *testing.T) {
	base := &v1alpha1.SliceBudget{}
	base.Name, base.ResourceVersion = "gold", "42"
	obj := base.DeepCopy()
	obj.Status.Capacity = cpuRL("10")
	data, err := statusPatch(base, obj)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, map[string]any{
		"metadata": map[string]any{"resourceVersion": "42"},
		"status":   map[string]any{"capacity": map[string]any{"cpu": "10"}, "accepted": float64(0), "waiting": float64(0)},
	}, got)
}
