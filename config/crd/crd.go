package crd

import (
	_ "embed"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// SliceBudgetsFile is the name of the SliceBudget CRD's file, in this
// directory and in the chart's crds/ directory.
const SliceBudgetsFile = "sliceclass.io_slicebudgets.yaml"

//go:embed sliceclass.io_slicebudgets.yaml
var sliceBudgetsYAML string

// SliceBudgetsYAML returns the SliceBudget CRD (slicebudgets.sliceclass.io)
// as committed, byte for byte: a new slice each call.
func SliceBudgetsYAML() []byte { return []byte(sliceBudgetsYAML) }

// SliceBudgets returns the SliceBudget CRD decoded, ready for
// envtest.CRDInstallOptions.CRDs or a client's Create; a new object each
// call. Unknown fields are an error, so that a CRD newer than the
// apiextensions types this module builds with is not installed short of a
// field.
func SliceBudgets() (*apiextensionsv1.CustomResourceDefinition, error) {
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(sliceBudgetsYAML), &c); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", SliceBudgetsFile, err)
	}
	return &c, nil
}
