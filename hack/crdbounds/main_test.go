package main

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crd is a CRD as controller-gen writes it, with a quantity in its spec
// (nested in a map, as a ResourceList's values are), one in its status and
// an int-or-string that is not a quantity.
const crd = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              limits:
                additionalProperties:
                  additionalProperties:
                    anyOf:
                    - type: integer
                    - type: string
                    pattern: ` + quantityPattern + `
                    x-kubernetes-int-or-string: true
                  type: object
                type: object
              port:
                x-kubernetes-int-or-string: true
            type: object
          status:
            properties:
              used:
                additionalProperties:
                  anyOf:
                  - type: integer
                  - type: string
                  pattern: ` + quantityPattern + `
                  x-kubernetes-int-or-string: true
                type: object
            type: object
        type: object
`

func TestBound(t *testing.T) {
	out, err := bound([]byte(crd))
	require.NoError(t, err)
	got := string(out)
	assert.Equal(t, 1, strings.Count(got, "maxLength: 64"), "the spec's quantity only, not the status's nor a port:\n%s", got)
	want := strings.Replace(crd, "                    pattern: "+quantityPattern, "                    maxLength: 64\n                    pattern: "+goQuantityPattern, 1)
	assert.Equal(t, want, got, "controller-gen's format kept, a line added and the spec's pattern tightened")

	again, err := bound(out)
	require.NoError(t, err)
	assert.Equal(t, got, string(again), "idempotent")
}

func TestBoundRefuses(t *testing.T) {
	cases := map[string]struct {
		reason, in, want string
	}{
		"NotACRD":    {reason: "a file with no versions is not what crdgen.sh meant to bound", in: "kind: ConfigMap\n", want: "not a CRD"},
		"NoQuantity": {reason: "a CRD with nothing to bound means the pattern changed: say so rather than pass", in: strings.ReplaceAll(crd, quantityPattern, "^[0-9]+$"), want: "nothing to bound"},
		"NotYAML":    {reason: "garbage is an error, not an empty CRD", in: "\t:::", want: "yaml"},
	}
	for name, tc := range cases {
		_, err := bound([]byte(tc.in))
		if assert.Error(t, err, "%s: %s", name, tc.reason) {
			assert.Contains(t, err.Error(), tc.want, name)
		}
	}
}

// The tightened pattern refuses what Go's parser refuses or decodes slowly
// among the strings controller-gen's pattern admits, and admits the
// quantities people write.
func TestGoQuantityPattern(t *testing.T) {
	loose, strict := regexp.MustCompile(quantityPattern), regexp.MustCompile(goQuantityPattern)
	for _, s := range []string{"0", "4", "500m", "16Gi", "1.5", ".5", "1.", "+3", "-2", "1e3", "1E-3", "2.5e+6", "1k", "1E",
		"1e999", "1e-999", "123456789012345678", "17179869184"} {
		_, err := resource.ParseQuantity(s)
		require.NoError(t, err, "%q is a quantity Go parses", s)
		assert.True(t, strict.MatchString(s), "%q: Go parses it, the pattern must admit it", s)
	}
	// Go refuses these: a fraction in the exponent, an exponent past int64.
	for _, s := range []string{"1e1.5", "2e0.5", "1e.5", "1e99999999999999999999", "1e9999999999999999999"} {
		require.True(t, loose.MatchString(s), "%q: controller-gen's pattern admits it", s)
		assert.False(t, strict.MatchString(s), "%q: the tightened pattern refuses it", s)
		_, err := resource.ParseQuantity(s)
		assert.Error(t, err, "%q: Go refuses it", s)
	}
	// Go takes seconds to minutes over these (not parsed here).
	for _, s := range []string{"1e1000", "1e-100000000", "1e999999999999999999"} {
		require.True(t, loose.MatchString(s), "%q: controller-gen's pattern admits it", s)
		assert.False(t, strict.MatchString(s), "%q: the tightened pattern refuses it", s)
	}
}

// A list item's and a map value's description lose the Go type's name that
// controller-gen copies from the type's doc comment; a field's own
// description, and a type doc not of that form, are kept.
func TestPlainDocs(t *testing.T) {
	schema := map[string]any{
		"description": "Thing is the root: kept.",
		"properties": map[string]any{
			"spec": map[string]any{
				"description": "spec is the desired state.",
				"properties": map[string]any{
					"consumers": map[string]any{
						"description": "consumers lists them.",
						"items":       map[string]any{"description": "ConsumerStatus is what one consumer holds."},
					},
					"labels": map[string]any{
						"additionalProperties": map[string]any{"description": "LabelValue is a label's value."},
					},
					"names": map[string]any{
						"items": map[string]any{"description": "Names of things, as they are."},
					},
				},
			},
		},
	}
	plainDocs(schema, false)
	spec := dig(schema, "properties", "spec").(map[string]any)
	assert.Equal(t, "Thing is the root: kept.", schema["description"])
	assert.Equal(t, "spec is the desired state.", spec["description"])
	assert.Equal(t, "consumers lists them.", dig(spec, "properties", "consumers", "description"))
	assert.Equal(t, "What one consumer holds.", dig(spec, "properties", "consumers", "items", "description"))
	assert.Equal(t, "A label's value.", dig(spec, "properties", "labels", "additionalProperties", "description"))
	assert.Equal(t, "Names of things, as they are.", dig(spec, "properties", "names", "items", "description"))
}
