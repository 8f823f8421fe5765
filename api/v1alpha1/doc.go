// Package v1alpha1 is the sliceclass.io/v1alpha1 API: SliceBudget, a
// budget an operator declares as a cluster-scoped object (short name sb)
// instead of building it in Go with budget.New or budget.NewNodePool.
//
// A SliceBudget's spec is the configuration of one budget: a fixed total or
// a node pool, preemption, eviction and the limits per consumer. Its status
// is what an operator on call reads first: capacity, what Accepted slices
// hold, what running pods use, what is being reclaimed, what is free, how
// many slices are accepted and how many wait, and the largest consumers.
// kubectl get sb shows how full each budget is and who waits.
//
// The API server refuses an invalid spec on create and on update (OpenAPI
// schema and CEL rules in the CRD): a negative quantity, or one Go cannot
// parse or parses slowly (1e1.5, 1e99999999: the CRD's quantity pattern is
// tightened to an integer exponent of at most 3 digits);
// a malformed resource name; total together with nodePool, or neither; a
// malformed selector; a duration that is not a positive Go duration. A
// manager reading SliceBudgets therefore never meets one it cannot decode
// or a budget cannot take. This is why the spec uses Quantities and
// NodeSelector, bounded forms of corev1.ResourceList and
// metav1.LabelSelector written the same way: the API server refuses CEL
// rules whose cost it cannot bound. Their ResourceList and LabelSelector
// methods give the usual types.
//
// The CRD is generated from these types by controller-gen into
// config/crd/sliceclass.io_slicebudgets.yaml (make crds; make crds-check
// fails when the committed CRD differs); register the Go types in a scheme
// with AddToScheme. No controller follows SliceBudgets yet: the types are
// the API's shape.
//
// +kubebuilder:object:generate=true
// +groupName=sliceclass.io
package v1alpha1
