package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

func TestLabelSelector(t *testing.T) {
	var none *v1alpha1.NodeSelector
	assert.Nil(t, none.LabelSelector(), "nil stays nil: it selects nothing, {} selects everything")

	s := selector(map[string]v1alpha1.LabelValue{"pool": "gpu"}, "zone", metav1.LabelSelectorOpNotIn, "edge", "lab")
	ls := s.LabelSelector()
	sel, err := metav1.LabelSelectorAsSelector(ls)
	require.NoError(t, err)
	assert.Equal(t, "pool=gpu,zone notin (edge,lab)", sel.String())

	ls.MatchLabels["pool"] = "cpu"
	ls.MatchExpressions[0].Values[0] = "core"
	assert.Equal(t, v1alpha1.LabelValue("gpu"), s.MatchLabels["pool"], "a copy: the object is not changed through it")
	assert.Equal(t, "edge", s.MatchExpressions[0].Values[0], "a copy: the object is not changed through it")

	every, err := metav1.LabelSelectorAsSelector((&v1alpha1.NodeSelector{}).LabelSelector())
	require.NoError(t, err)
	assert.True(t, every.Empty(), "{} selects every node")
}

func TestQuantitiesResourceList(t *testing.T) {
	var none v1alpha1.Quantities
	assert.Nil(t, none.ResourceList())

	q := quantities("cpu", "4")
	rl := q.ResourceList()
	assert.Equal(t, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, rl)
	rl[corev1.ResourceCPU] = resource.MustParse("8")
	cpu := q[corev1.ResourceCPU]
	assert.Equal(t, "4", cpu.String(), "a copy: the object is not changed through it")
}
