package budget_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// A resource name Kubernetes would refuse (neither standard nor
// domain-qualified) is refused where a budget is built or changed: a budget
// limits only what it names, so "cpus" would leave CPU unlimited.
func TestResourceNamesRefusedAsKubernetesRefusesThem(t *testing.T) {
	const words = "neither a standard resource name (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>) nor domain-qualified"
	cases := map[string]struct {
		build func() error
		want  []string
	}{
		"Total": {func() error { _, err := budget.New("b", list("cpus", "2")); return err },
			[]string{`budget "b"`, "total", `"cpus" is ` + words, "would limit nothing"}},
		"NotQualified": {func() error { _, err := budget.New("b", list("cpu", "2", "a/b/c", "1")); return err },
			[]string{`budget "b"`, "total", `"a/b/c" is not a qualified name`}},
		"ConsumerLimit": {func() error {
			_, err := budget.New("b", list("cpu", "8"), budget.WithConsumerLimit(list("gpu", "1")))
			return err
		}, []string{`budget "b"`, "consumer limit", `"gpu" is ` + words}},
		"PoolResources": {func() error {
			_, err := budget.NewNodePool(envkit.UnreachableManager(t), "p", labels.Everything(), budget.WithResources("cpu", "mem"))
			return err
		}, []string{`budget "p"`, "resources", `"mem" is ` + words}},
		"SetTotal": {func() error {
			b, err := budget.New("b", list("cpu", "8"))
			require.NoError(t, err)
			return b.SetTotal(list("cpus", "4"))
		}, []string{`budget "b"`, "total", `"cpus"`}},
		"SetConsumerLimit": {func() error {
			b, err := budget.New("b", list("cpu", "8"))
			require.NoError(t, err)
			return b.SetConsumerLimit("acme", list("memroy", "1Gi"))
		}, []string{`budget "b"`, `consumer limit of "acme"`, `"memroy"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.build()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	b, err := budget.New("ok", list("cpu", "1", "memory", "1Gi", "ephemeral-storage", "1Gi", "storage", "1Ti",
		"pods", "10", "hugepages-2Mi", "1Gi", "nvidia.com/gpu", "2"))
	require.NoError(t, err, "standard and domain-qualified names are accepted")
	require.NoError(t, b.SetTotal(list("cpu", "2", "memory", "1Gi", "ephemeral-storage", "1Gi", "storage", "1Ti",
		"pods", "10", "hugepages-2Mi", "1Gi", "nvidia.com/gpu", "3")))
	gpu := b.Total()[corev1.ResourceName("nvidia.com/gpu")]
	assert.Equal(t, "3", gpu.String(), "a domain-qualified name is limited")
}
