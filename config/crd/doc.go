// Package crd holds the CustomResourceDefinitions of the sliceclass API
// (api/v1alpha1), the files of this directory as `make crds` generates
// them, embedded for programs that install them: testing/controlplane
// installs SliceBudget's next to Liqo's, and an installer of your own can
// apply the same bytes. The Helm chart ships a copy in its crds/ directory,
// which `make crds` writes and `make crds-check` and the chart's tests
// compare with this one.
package crd
