package statusclass

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInSchema(t *testing.T) {
	doc := func(statusProps string) []byte {
		return []byte(`{"components":{"schemas":{
			"io.liqo.authentication.v1beta1.Tenant":{"properties":{"status":{"properties":{"class":{}}}},
				"x-kubernetes-group-version-kind":[{"group":"authentication.liqo.io","kind":"Tenant","version":"v1beta1"}]},
			"io.liqo.authentication.v1beta1.ResourceSlice":{"properties":{"spec":{"properties":{"class":{}}},"status":{"properties":` + statusProps + `}},
				"x-kubernetes-group-version-kind":[{"group":"authentication.liqo.io","kind":"ResourceSlice","version":"v1beta1"}]}}}}`)
	}
	ok, err := inSchema(doc(`{"resources":{},"class":{"type":"string"}}`))
	require.NoError(t, err)
	assert.True(t, ok, "a newer CRD declares status.class")

	ok, err = inSchema(doc(`{"resources":{}}`))
	require.NoError(t, err)
	assert.False(t, ok, "v1.2.0's CRD has spec.class only; another kind's status.class does not count")

	_, err = inSchema([]byte(`{"components":{"schemas":{}}}`))
	assert.Error(t, err, "no ResourceSlice schema is an error, not a no")
	_, err = inSchema([]byte(`not json`))
	assert.Error(t, err)
}
