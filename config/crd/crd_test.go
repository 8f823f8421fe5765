package crd_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/config/crd"
)

// The embedded bytes are the file in this directory, and decode into the
// SliceBudget CRD of api/v1alpha1's group and version.
func TestSliceBudgetsIsTheCommittedFile(t *testing.T) {
	raw, err := os.ReadFile(crd.SliceBudgetsFile)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(crd.SliceBudgetsYAML()))

	c, err := crd.SliceBudgets()
	require.NoError(t, err)
	assert.Equal(t, "slicebudgets."+v1alpha1.Group, c.Name)
	assert.Equal(t, "SliceBudget", c.Spec.Names.Kind)
	require.Len(t, c.Spec.Versions, 1)
	assert.Equal(t, v1alpha1.Version, c.Spec.Versions[0].Name)

	c.Name = "changed"
	again, err := crd.SliceBudgets()
	require.NoError(t, err)
	assert.Equal(t, "slicebudgets."+v1alpha1.Group, again.Name, "each call decodes a new object")
	b := crd.SliceBudgetsYAML()
	b[0] = 'x'
	assert.Equal(t, string(raw), string(crd.SliceBudgetsYAML()), "each call returns a new slice")
}
