package main

import (
	"strings"
	"testing"

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
	want := strings.Replace(crd, "                    pattern:", "                    maxLength: 64\n                    pattern:", 1)
	assert.Equal(t, want, got, "controller-gen's format kept, one line added")

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
