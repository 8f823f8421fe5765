package v1alpha1

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxConsumers is how many consumers SliceBudgetStatus.Consumers lists at
// most: the largest holders, so that a budget shared by many consumers
// keeps a status of bounded size. The CRD refuses a longer list.
const MaxConsumers = 20

// SliceBudget is a budget declared as an object: a finite capacity that
// the ResourceSlices of one or several classes draw from. It is
// cluster-scoped; its short name is sb.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=sb,categories=sliceclass
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the budget admits by its spec; the Ready condition's message says why not"
// +kubebuilder:printcolumn:name="Accepted",type=integer,JSONPath=`.status.accepted`,description="Slices holding an acceptance from the budget, those whose larger offer waits included"
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waiting`,description="Slices holding no acceptance that wait for capacity"
// +kubebuilder:printcolumn:name="Fullest",type=string,JSONPath=`.status.fullest.resource`,description="The resource the budget has given the largest share of"
// +kubebuilder:printcolumn:name="Full%",type=integer,JSONPath=`.status.fullest.percent`,description="The percent of the fullest resource's capacity Accepted slices hold; over 100 while the capacity is below it (the CapacityBelowUsed condition)"
// +kubebuilder:printcolumn:name="CPU Used",type=string,JSONPath=`.status.used.cpu`,priority=1,description="CPU Accepted slices hold"
// +kubebuilder:printcolumn:name="CPU Capacity",type=string,JSONPath=`.status.capacity.cpu`,priority=1,description="CPU the budget offers"
// +kubebuilder:printcolumn:name="Borrowed",type=string,JSONPath=`.status.borrowed`,description="What the budget's slices hold beyond its capacity, borrowed from its cohort, per resource"
// +kubebuilder:printcolumn:name="Lent",type=string,JSONPath=`.status.lent`,description="What other budgets of its cohort hold of its capacity, per resource"
// +kubebuilder:printcolumn:name="Cohort",type=string,JSONPath=`.spec.cohort`,priority=1,description="The cohort the budget lends to and borrows from"
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.status.cohortMembers`,priority=1,description="The budgets the manager serving it serves in its cohort, itself included: a cohort of one from a misspelt cohort shows here"
// +kubebuilder:printcolumn:name="Memory Used",type=string,JSONPath=`.status.used.memory`,priority=1,description="Memory Accepted slices hold"
// +kubebuilder:printcolumn:name="Memory Capacity",type=string,JSONPath=`.status.capacity.memory`,priority=1,description="Memory the budget offers"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1,description="Why the budget is Ready or not"
// +kubebuilder:printcolumn:name="Preemption",type=string,JSONPath=`.spec.preemption`,priority=1,description="Both preemption rules: whom waiting slices may reclaim from within the budget (withinBudget) and from borrowers in its cohort (reclaimWithinCohort)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SliceBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the budget's configuration: what it offers, and the rules it
	// admits and takes capacity back by.
	// +required
	Spec SliceBudgetSpec `json:"spec"`
	// status is what the budget holds, written by the manager that serves it.
	// +optional
	Status SliceBudgetStatus `json:"status,omitempty"`
}

// SliceBudgetSpec configures a budget: exactly one of Total and NodePool
// says what it offers; the other fields are the rules a Go-built budget
// takes as options (budget.WithPreemption, budget.WithEvictionAfter,
// budget.WithConsumerLimit, Budget.SetConsumerLimit; in a cohort,
// budget.WithCohort, WithBorrowingLimit, WithLendingLimit and
// WithReclaimWithinCohort).
//
// Every quantity is non-negative, every resource name a qualified name
// (cpu, memory, nvidia.com/gpu): the API server refuses anything else.
//
// +kubebuilder:validation:XValidation:rule="has(self.total) != has(self.nodePool)",message="exactly one of total and nodePool must be set: a budget offers either a fixed total or what a node pool has"
// +kubebuilder:validation:XValidation:rule="has(self.cohort) || (!has(self.borrowingLimit) && !has(self.lendingLimit) && (!has(self.preemption) || !has(self.preemption.reclaimWithinCohort) || self.preemption.reclaimWithinCohort == 'Never'))",message="borrowingLimit, lendingLimit and preemption.reclaimWithinCohort need a cohort: set spec.cohort"
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || !has(self.total) || self.lendingLimit.all(r, r in self.total)",message="lendingLimit names only resources of total"
// +kubebuilder:validation:XValidation:rule="!has(self.borrowingLimit) || !has(self.total) || self.borrowingLimit.all(r, r in self.total)",message="borrowingLimit names only resources of total"
type SliceBudgetSpec struct {
	// total is a fixed capacity. The budget limits exactly the resources it
	// names: a resource it does not name is not limited, one named with 0
	// admits none. Set it or nodePool, not both.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MinProperties=1
	Total Quantities `json:"total,omitempty"`

	// nodePool makes the capacity follow the provider's nodes that match
	// its selector. Set it or total, not both.
	// +optional
	NodePool *NodePool `json:"nodePool,omitempty"`

	// preemption says which Accepted slices a slice that waits may reclaim
	// capacity from. The API server defaults it to {withinBudget: Never}:
	// the budget preempts nothing.
	// +optional
	// +kubebuilder:default={}
	Preemption *SliceBudgetPreemption `json:"preemption,omitempty"`

	// evictionAfterSeconds lets the budget delete running pods of a slice
	// it shrank that still use more than it keeps this many seconds after
	// the shrink, the newest first. Unset, no pod is ever evicted; 0 evicts
	// as soon as the shrunk slice's pods are seen using more than it keeps.
	// At most 2147483647, the largest 32-bit integer (the API server checks
	// the format's range only with this bound).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	EvictionAfterSeconds *int32 `json:"evictionAfterSeconds,omitempty"`

	// consumerLimit caps what any one consumer holds from the budget, per
	// resource it names. The consumer is the tenant namespace's
	// liqo.io/remote-cluster-id, else the namespace.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MinProperties=1
	ConsumerLimit Quantities `json:"consumerLimit,omitempty"`

	// consumerLimits overrides consumerLimit for the consumers it names, one
	// entry per consumer (at most 256). An override replaces consumerLimit
	// for that consumer: a resource the override does not name is not
	// limited for it.
	// +optional
	// +listType=map
	// +listMapKey=consumer
	// +kubebuilder:validation:MaxItems=256
	ConsumerLimits []ConsumerLimitOverride `json:"consumerLimits,omitempty"`

	// cohort names the cohort the budget lends to and borrows from: the
	// SliceBudgets whose classes one class set of a manager serves (the
	// classes of one classes file, as the chart deploys it) and whose spec
	// names the same cohort lend each other what they leave idle. total is
	// then what the budget is guaranteed. Unset, the budget is in no
	// cohort.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Cohort string `json:"cohort,omitempty"`

	// borrowingLimit caps, per resource it names, how much more than its
	// total the budget's slices may hold, borrowed from its cohort; a
	// resource it does not name is limited only by what the cohort has
	// idle. It needs a cohort.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MinProperties=1
	BorrowingLimit Quantities `json:"borrowingLimit,omitempty"`

	// lendingLimit caps, per resource it names, how much of its total the
	// other budgets of its cohort may borrow; a resource it does not name
	// lends all of it that is idle. The rest is guaranteed to the budget:
	// never held by another budget's slices. A limit above the total
	// lends all of it (as for a node pool, whose total moves; the API
	// server does not compare quantities, whose CEL cost Kubernetes 1.33
	// refuses). It needs a cohort.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MinProperties=1
	LendingLimit Quantities `json:"lendingLimit,omitempty"`
}

// PreemptionPolicy says which Accepted slices a slice that waits may
// reclaim capacity from: Never, none; LowerPriority, those of strictly
// lower priority (resourceslice.WithPriority).
//
// +kubebuilder:validation:Enum=Never;LowerPriority
type PreemptionPolicy string

const (
	// PreemptionNever reclaims from no slice: a slice that waits, waits
	// for capacity to free.
	PreemptionNever PreemptionPolicy = "Never"
	// PreemptionLowerPriority lets a slice that waits reclaim capacity
	// from Accepted slices of strictly lower priority, as
	// budget.WithPreemption does.
	PreemptionLowerPriority PreemptionPolicy = "LowerPriority"
)

// SliceBudgetPreemption is a budget's preemption policy: from whom a
// slice that waits may reclaim capacity.
type SliceBudgetPreemption struct {
	// withinBudget is whom a slice that waits may reclaim from among the
	// budget's own Accepted slices: Never (the default) or LowerPriority.
	// +optional
	// +kubebuilder:default=Never
	WithinBudget PreemptionPolicy `json:"withinBudget,omitempty"`

	// reclaimWithinCohort is what the budget takes back of what it lent
	// to its cohort when a slice of its own waits while the budget holds
	// less than its total: Never (as unset), LowerPriority (from the
	// borrowers' slices of strictly lower priority) or Any. The borrowers'
	// slices are shrunk, the lowest priority first, by no more than the
	// waiter lacks and never below their own budget's total; the waiter is
	// admitted once their running pods fit. No pod is evicted for it
	// (unless the borrower's own evictionAfterSeconds says so).
	// +optional
	ReclaimWithinCohort CohortReclaimPolicy `json:"reclaimWithinCohort,omitempty"`
}

// CohortReclaimPolicy says what a budget takes back of what it lent to its
// cohort: Never, nothing; LowerPriority, what borrowers' slices of strictly
// lower priority hold; Any, what any borrower's slices hold.
//
// +kubebuilder:validation:Enum=Never;LowerPriority;Any
type CohortReclaimPolicy string

const (
	// CohortReclaimNever takes nothing back: the budget's slices wait
	// until the borrowers release what it lent.
	CohortReclaimNever CohortReclaimPolicy = "Never"
	// CohortReclaimLowerPriority takes back what borrowers' slices of
	// strictly lower priority hold.
	CohortReclaimLowerPriority CohortReclaimPolicy = "LowerPriority"
	// CohortReclaimAny takes back what any borrower's slices hold.
	CohortReclaimAny CohortReclaimPolicy = "Any"
)

// ConsumerLimitOverride is one consumer's own limit in a budget, in place
// of spec.consumerLimit.
type ConsumerLimitOverride struct {
	// consumer names the consumer: its cluster ID (the tenant namespace's
	// liqo.io/remote-cluster-id), else the tenant namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Consumer string `json:"consumer"`

	// limits caps what the consumer holds from the budget, per resource it
	// names; a resource it does not name is not limited for the consumer.
	// It names at least one resource: remove the entry to fall back to
	// consumerLimit.
	// +required
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:XValidation:rule="size(self) > 0",message="an override names at least one resource: remove the entry to fall back to consumerLimit"
	Limits Quantities `json:"limits"`
}

// Quantities is a ResourceList the API server checks: at most 32
// resources, each a standard resource name (cpu, memory,
// ephemeral-storage, storage, pods, hugepages-<size>) or a domain-qualified
// one (nvidia.com/gpu), as Kubernetes checks a container's, with a
// non-negative quantity that Go parses at once (an exponent, if any, is an
// integer of at most 3 digits). Convert it with ResourceList.
//
// +kubebuilder:validation:MaxProperties=32
// +kubebuilder:validation:XValidation:rule="self.all(r, !format.qualifiedName().validate(r).hasValue())",message="resource names must be qualified names such as cpu or nvidia.com/gpu"
// +kubebuilder:validation:XValidation:rule="self.all(r, r.contains('/') || r in ['cpu', 'memory', 'ephemeral-storage', 'storage', 'pods'] || r.startsWith('hugepages-'))",message="resource names must be standard (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>) or domain-qualified such as nvidia.com/gpu: a budget limits only the resources it names, so a misspelt name would limit nothing"
// +kubebuilder:validation:XValidation:rule="self.all(r, type(self[r]) == int ? self[r] >= 0 : !self[r].startsWith('-'))",message="quantities must not be negative"
type Quantities map[corev1.ResourceName]resource.Quantity

// ResourceList returns a copy of q as a corev1.ResourceList, what
// budget.New, budget.WithConsumerLimit and Budget.SetConsumerLimit take; a
// nil q gives nil.
func (q Quantities) ResourceList() corev1.ResourceList {
	return corev1.ResourceList(q).DeepCopy()
}

// NodePool is a capacity that follows the provider's nodes: the sum of the
// allocatable of the Ready, schedulable, non-virtual nodes matching
// Selector, times SharePercent, minus Reserve and, with LocalPods, minus
// what the provider's own pods request, never below zero: budget.NewNodePool
// with budget.WithResources, WithSharePercent, WithReserve and
// WithLocalPods.
type NodePool struct {
	// selector picks the pool's nodes by label; {} selects every node.
	// +required
	Selector *NodeSelector `json:"selector"`

	// resources names the resources the budget limits (default cpu,
	// memory, pods). A named resource no node of the pool has is 0: it
	// admits none, never unlimited.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Type=string
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.all(r, !format.qualifiedName().validate(r).hasValue())",message="resource names must be qualified names such as cpu or nvidia.com/gpu"
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.contains('/') || r in ['cpu', 'memory', 'ephemeral-storage', 'storage', 'pods'] || r.startsWith('hugepages-'))",message="resource names must be standard (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>) or domain-qualified such as nvidia.com/gpu: a budget limits only the resources it names, so a misspelt name would limit nothing"
	Resources []corev1.ResourceName `json:"resources,omitempty"`

	// sharePercent offers this percent of the pool (1–100, default 100),
	// before reserve is taken.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SharePercent int32 `json:"sharePercent,omitempty"`

	// reserve is kept back from the pool for the provider's own use.
	// +optional
	Reserve Quantities `json:"reserve,omitempty"`

	// localPods subtracts what the provider's own pods on the pool's nodes
	// request (those not offloaded through Liqo).
	// +optional
	LocalPods bool `json:"localPods,omitempty"`
}

// NodeSelector picks nodes by label. It is a metav1.LabelSelector, written
// the same way, with bounds the API server checks: at most 64 labels and 16
// expressions of 64 values, label keys and values well-formed, operators
// In and NotIn with values, Exists and DoesNotExist without. Convert it
// with LabelSelector.
type NodeSelector struct {
	// matchLabels selects the nodes carrying every one of these labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="keys must be label keys such as pool or example.com/pool"
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`
	// matchExpressions selects the nodes matching every expression.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelValue is a label's value: at most 63 characters, alphanumerics,
// '-', '_' and '.', beginning and ending with an alphanumeric, or empty.
//
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// NodeSelectorRequirement is one expression of a node pool's selector, as
// in a label selector's matchExpressions.
//
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",message="operators In and NotIn take values, Exists and DoesNotExist none"
type NodeSelectorRequirement struct {
	// key is the label key.
	// +required
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="key must be a label key such as pool or example.com/pool"
	Key string `json:"key"`
	// operator relates the key to the values: In, NotIn, Exists or
	// DoesNotExist.
	// +required
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// values are label values: at least one for In and NotIn, none for
	// Exists and DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(v, !format.labelValue().validate(v).hasValue())",message="values must be label values"
	Values []string `json:"values,omitempty"`
}

// LabelSelector returns s as a metav1.LabelSelector, which
// metav1.LabelSelectorAsSelector turns into the labels.Selector
// budget.NewNodePool takes; a nil s gives nil.
func (s *NodeSelector) LabelSelector() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	if s.MatchLabels != nil {
		out.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			out.MatchLabels[k] = string(v)
		}
	}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: r.Operator, Values: slices.Clone(r.Values),
		})
	}
	return out
}

// SliceBudgetStatus is what a budget holds, as the manager serving it
// counts it. Every ResourceList names the resources the budget limits.
type SliceBudgetStatus struct {
	// capacity is what the budget offers: its total, or what its node pool
	// offers now.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// used is what the budget's Accepted slices hold, as its books count
	// it: the larger of each slice's grant and Liqo's Quota for it, plus
	// admissions being written.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// inUse is what the consumers' running pods use of the budget.
	// +optional
	InUse corev1.ResourceList `json:"inUse,omitempty"`
	// reclaiming is capacity granted away from shrunk slices (to a higher
	// priority, a lower consumer limit or a smaller capacity) that their
	// running pods still use: it frees as those pods end.
	// +optional
	Reclaiming corev1.ResourceList `json:"reclaiming,omitempty"`
	// available is what is free to admit: capacity minus used, never
	// below zero; in a cohort, what the budget's slices may still take
	// there (its idle guaranteed part and what the cohort has idle to
	// lend, within its borrowing limit).
	// +optional
	Available corev1.ResourceList `json:"available,omitempty"`
	// fullest is the resource of capacity of which used holds the largest
	// share, whatever the resource (cpu, memory, nvidia.com/gpu): how full
	// the budget is, at a glance; ties go to the first name in order. A
	// resource offered at 0 that nothing holds is left out (it admits none
	// by design) unless every resource is such, when the first is shown
	// full. Unset while the budget limits nothing.
	// +optional
	Fullest *Fullness `json:"fullest,omitempty"`
	// borrowed is what the budget's slices hold beyond its capacity,
	// borrowed from its cohort. Written for a budget in a cohort only.
	// +optional
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`
	// lent is what other budgets' slices hold of the budget's capacity:
	// the cohort's borrowed amount split among the budgets that leave
	// lendable capacity idle, in proportion to what each leaves. Written
	// for a budget in a cohort only.
	// +optional
	Lent corev1.ResourceList `json:"lent,omitempty"`
	// cohortMembers are the names of the budgets the manager serving this
	// one serves in its cohort (SliceBudgets, and budgets its code builds
	// naming the cohort), sorted, this one included: who it lends to and
	// borrows from. A cohort of one (a misspelt spec.cohort,
	// or a member not served yet) shows only its own name. Unset for a
	// budget in no cohort. At most 100 names, the first by name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	CohortMembers []string `json:"cohortMembers,omitempty"`

	// accepted counts the slices that hold an acceptance from the budget
	// (observed, or being written), whether or not a larger offer of
	// theirs waits: an Accepted slice whose growth waits is counted here,
	// not in waiting. It and waiting are written even when 0, so that
	// kubectl shows 0 for a budget served and empty, and a blank cell only
	// for one no manager serves.
	// +required
	// +kubebuilder:validation:Minimum=0
	Accepted int32 `json:"accepted"`
	// waiting counts the slices that hold no acceptance from the budget
	// and wait for its capacity (denied for now, admitted when it frees).
	// accepted and waiting never count one slice twice.
	// +required
	// +kubebuilder:validation:Minimum=0
	Waiting int32 `json:"waiting"`

	// consumers are the consumers holding the most, the largest first (by
	// their dominant share of the budget), at most 20 of them.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	Consumers []ConsumerStatus `json:"consumers,omitempty"`

	// consumerLimits are the per-consumer limits in force, one entry per
	// consumer the applied spec.consumerLimits names, in name order: what
	// the budget enforces, so that a list a merge patch replaced, or an
	// entry dropped, shows here. An entry whose consumer the budget counts
	// no slice of (known false) limits nobody today: a mistyped consumer ID
	// shows so, and the manager logs it when the limit is set.
	// +optional
	// +listType=map
	// +listMapKey=consumer
	// +kubebuilder:validation:MaxItems=256
	ConsumerLimits []ConsumerLimitStatus `json:"consumerLimits,omitempty"`

	// conditions are the budget's conditions: Ready (the spec applied, or
	// why not) and CapacityBelowUsed (True while capacity is below used for
	// some resource, its message naming them and the figures when it began;
	// for a member of a cohort, True with reason CohortOverCommitted while
	// it holds more than its total and borrowingLimit, or the members hold
	// more than their totals; False otherwise).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the spec's generation this status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Fullness is how much of one resource's capacity a budget's Accepted
// slices hold.
type Fullness struct {
	// resource names the resource, as capacity names it.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Resource corev1.ResourceName `json:"resource"`
	// percent is used over capacity for the resource, in percent rounded
	// down: 100 is full, more is a capacity below what the slices hold (the
	// CapacityBelowUsed condition says so), capped at 1000, which a
	// capacity of 0 that anything holds shows.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Percent int32 `json:"percent"`
}

// MaxFullPercent caps Fullness.Percent: a capacity shrunk far below what
// the slices hold (or to 0) shows 1000, not an unbounded figure.
const MaxFullPercent = 1000

// ConsumerLimitStatus is one consumer's limit in force.
type ConsumerLimitStatus struct {
	// consumer is the consumer's cluster ID, as spec.consumerLimits names
	// it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Consumer string `json:"consumer"`
	// limits are what the consumer may hold from the budget, per resource.
	// +required
	Limits corev1.ResourceList `json:"limits"`
	// known is whether the budget counts a slice of the consumer (holding
	// or waiting). False for a consumer none of whose slices the budget
	// has seen: its limit applies when one appears, or never if the ID is
	// mistyped.
	// +required
	Known bool `json:"known"`
}

// ConsumerStatus is what one consumer holds from a budget, and how many of
// its slices wait.
type ConsumerStatus struct {
	// name is the consumer: its cluster ID (the tenant namespace's
	// liqo.io/remote-cluster-id), else the tenant namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// used is what the consumer's Accepted slices hold of the budget.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// waiting counts the consumer's slices that hold no acceptance and
	// wait for capacity, as the budget's waiting counts them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Waiting int32 `json:"waiting,omitempty"`
}

// SliceBudgetList is a list of SliceBudgets.
//
// +kubebuilder:object:root=true
type SliceBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the SliceBudgets.
	Items []SliceBudget `json:"items"`
}
