package crd_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

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

// The schema reads as API docs (kubectl explain sb.spec...): no
// description below the root begins with a Go type's name ("ConsumerStatus
// is ...") or names a Go identifier (budget.New, SliceBudgetSpec.Total,
// metav1.LabelSelector); fields are named by their JSON names.
func TestSchemaDocsNameNoGoIdentifier(t *testing.T) {
	c, err := crd.SliceBudgets()
	require.NoError(t, err)
	goTypeDoc := regexp.MustCompile(`^[A-Z][a-z]+[A-Z][A-Za-z]* is `)
	goRef := regexp.MustCompile(`\b(budget|resourceslice|v1alpha1|metav1|corev1|v1)\.[A-Z]|\b[A-Z][A-Za-z]*(Spec|Status)\.[A-Z]`)
	n := 0
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		if s.Description != "" && path != "" && path != ".apiVersion" && path != ".kind" && path != ".metadata" {
			n++
			assert.NotRegexp(t, goTypeDoc, s.Description, "%s begins with a Go type's name", path)
			assert.NotRegexp(t, goRef, s.Description, "%s names a Go identifier", path)
		}
		for name, p := range s.Properties {
			walk(path+"."+name, &p)
		}
		if s.Items != nil {
			walk(path+"[]", s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			walk(path+"{}", s.AdditionalProperties.Schema)
		}
	}
	walk("", c.Spec.Versions[0].Schema.OpenAPIV3Schema)
	assert.Greater(t, n, 40, "the schema's fields are described")
}
