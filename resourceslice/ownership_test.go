package resourceslice

import (
	"reflect"
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryStatusFieldHasAnOwner walks every JSON field of
// ResourceSliceStatus: each must be declared in statusFields, as ours, as
// Liqo's, or shared. When Liqo adds a status field (status.class is coming),
// this fails until someone decides who owns it; otherwise it would silently
// be neither saved nor reported.
func TestEveryStatusFieldHasAnOwner(t *testing.T) {
	declared := map[string]statusField{}
	for _, f := range statusFields {
		require.NotContains(t, declared, f.json, "status.%s declared twice", f.json)
		declared[f.json] = f
	}
	typ := reflect.TypeOf(authv1beta1.ResourceSliceStatus{})
	seen := map[string]bool{}
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		require.NotEmpty(t, name, "field %s has no JSON name", typ.Field(i).Name)
		seen[name] = true
		f, ok := declared[name]
		if !assert.True(t, ok, "status.%s has no owner in statusFields: declare it ours (copy, compare, patch) or Liqo's (compare)", name) {
			continue
		}
		assert.True(t, f.ours != nil || f.theirs != nil, "status.%s is declared but owned by nobody", name)
		if f.ours != nil {
			assert.NotNil(t, f.copy, "status.%s is ours but has no copy", name)
			assert.NotNil(t, f.patch, "status.%s is ours but has no patch", name)
		}
	}
	for name := range declared {
		assert.True(t, seen[name], "statusFields declares status.%s, which ResourceSliceStatus does not have", name)
	}
}
