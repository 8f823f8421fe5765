package v1alpha1_test

import (
	"iter"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
)

// committedSchema is the committed CRD's schema of v1alpha1.
func committedSchema(t *testing.T) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	raw, err := os.ReadFile(crdFile)
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(raw, &crd))
	require.Len(t, crd.Spec.Versions, 1)
	require.Equal(t, v1alpha1.Version, crd.Spec.Versions[0].Name)
	require.Equal(t, v1alpha1.Group, crd.Spec.Group)
	return *crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// The committed CRD has a property for every JSON field of the Go types
// and none more, down through this package's own types: a field added to
// the types without make crds fails here in milliseconds, without
// controller-gen. (make crds-check compares the whole file, rules
// included, with what controller-gen generates.)
func TestCRDMatchesGoTypes(t *testing.T) {
	root := committedSchema(t)
	var walk func(path string, typ reflect.Type, s apiextensionsv1.JSONSchemaProps)
	walk = func(path string, typ reflect.Type, s apiextensionsv1.JSONSchemaProps) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
			if s.Items != nil && s.Items.Schema != nil {
				s = *s.Items.Schema
			}
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeFor[v1alpha1.SliceBudget]().PkgPath() {
			return // another package's type: its schema is its own
		}
		var fields []string
		for f := range jsonFields(typ) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields = append(fields, name)
			if p, ok := s.Properties[name]; ok {
				walk(path+"."+name, f.Type, p)
			}
		}
		sort.Strings(fields)
		var props []string
		for name := range s.Properties {
			props = append(props, name)
		}
		sort.Strings(props)
		assert.Equal(t, fields, props, "%s: Go fields against CRD properties: run make crds", path)
	}
	walk("", reflect.TypeFor[v1alpha1.SliceBudget](), root)
}

// jsonFields are the fields of a struct type that have a name in JSON,
// those of inlined structs (TypeMeta's apiVersion and kind) included.
func jsonFields(typ reflect.Type) iter.Seq[reflect.StructField] {
	return func(yield func(reflect.StructField) bool) {
		for f := range typ.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case name == "" && f.Anonymous && opts == "inline":
				for g := range jsonFields(f.Type) {
					if !yield(g) {
						return
					}
				}
			case name != "":
				if !yield(f) {
					return
				}
			}
		}
	}
}

// The bound the Go side knows is the bound the API server enforces.
func TestCRDBoundsMatchGo(t *testing.T) {
	status := committedSchema(t).Properties["status"]
	consumers := status.Properties["consumers"]
	require.NotNil(t, consumers.MaxItems)
	assert.Equal(t, int64(v1alpha1.MaxConsumers), *consumers.MaxItems, "status.consumers maxItems against MaxConsumers")

	root := committedSchema(t)
	assert.True(t, slices.Contains(root.Required, "spec"), "spec is required")
	assert.True(t, slices.Contains(root.Properties["spec"].Properties["nodePool"].Required, "selector"), "nodePool.selector is required")
}
