// Package v1alpha1 is the sliceclass.io/v1alpha1 API: SliceBudget, a
// budget an operator declares as a cluster-scoped object (short name sb)
// instead of building it in Go with budget.New or budget.NewNodePool.
//
// A SliceBudget's spec is the configuration of one budget: a fixed total or
// a node pool, preemption, eviction, the limits per consumer, and the
// cohort it lends to and borrows from (cohort, borrowingLimit,
// lendingLimit, preemption.reclaimWithinCohort). Its status is what an
// operator on call reads first: capacity, what Accepted slices hold, what
// running pods use, what is being reclaimed, what is free, what it borrows
// and lends in its cohort, how many slices are accepted and how many wait,
// and the largest consumers.
// kubectl get sb shows how full each budget is and who waits.
//
// The API server refuses an invalid spec on create and on update (OpenAPI
// schema and CEL rules in the CRD): a negative quantity, or one Go cannot
// parse or parses slowly (1e1.5, 1e99999999: the CRD's quantity pattern is
// tightened to an integer exponent of at most 3 digits);
// a malformed resource name; total together with nodePool, or neither; a
// malformed selector; an unknown preemption policy; a negative
// evictionAfterSeconds; a consumer override that is empty or names its
// consumer twice; a cohort that is not a DNS label; borrowingLimit,
// lendingLimit or a reclaimWithinCohort other than Never without a
// cohort; beside a total, a limit on a resource the total does not name.
// A manager reading SliceBudgets therefore never meets one it cannot
// decode. What the schema cannot say, the budget following the object
// checks (its Ready condition False, reason SpecRefused): a cohort limit
// on a resource a nodePool does not limit. A lendingLimit above total is
// valid: the budget lends all of its total.
//
// The spec uses Quantities and NodeSelector, bounded forms of
// corev1.ResourceList and metav1.LabelSelector written the same way,
// because the API server refuses CEL rules whose cost it cannot bound.
// Their ResourceList and LabelSelector methods give the usual types.
//
// The CRD is generated from these types by controller-gen into
// config/crd/sliceclass.io_slicebudgets.yaml and the Helm chart's crds/
// (make crds; make crds-check fails when the committed CRD differs); the
// fields' doc comments are its descriptions (kubectl explain sb.spec), so
// they name fields by their JSON names. Register the Go types in a scheme
// with AddToScheme, the one way: a manager serving classes calls it beside
// Liqo's groups' own.
// budget.FromObject builds a budget that follows a SliceBudget live (an
// edit applies within a second, no restart) and, on the leader, writes its
// status.
//
// +kubebuilder:object:generate=true
// +groupName=sliceclass.io
package v1alpha1
