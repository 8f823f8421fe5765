package budget

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// ReasonExhausted is the Resources condition reason of a slice denied for
// lack of budget. Its message names the budget and each short resource
// with what was asked, what the slice holds, and how much must be free for
// it ("cpu: asked 4, waits until 4 is free"); what is
// free now is in the budget's status and metrics, not in the message.
const ReasonExhausted = ledger.ReasonExhausted

// ReasonConsumerLimit is the Resources condition reason of a slice denied
// because its consumer would hold more than its limit (WithConsumerLimit,
// SetConsumerLimit). Its message names the consumer and, for each resource,
// what was asked and the limit, and what would have to change (the
// consumer's other slices release capacity, or the limit is raised).
const ReasonConsumerLimit = ledger.ReasonConsumerLimit

// ReasonUnavailable is the Resources condition reason of a slice denied
// because its budget admits nothing new for a cause other than its
// capacity: the SliceBudget a FromObject budget follows is missing, its
// spec was refused, or its node pool cannot be read. Its message names the
// budget and the cause. A slice that asks no more than it holds is not
// refused: an unavailable budget revokes nothing.
const ReasonUnavailable = ledger.ReasonUnavailable

// ReasonReclaimed is the Resources condition reason of a slice that stays
// Accepted with a smaller offer because a slice of higher priority
// reclaimed capacity from it (WithPreemption); its Warning event has the
// same reason.
const ReasonReclaimed = ledger.ReasonReclaimed

// Budget is a finite capacity shared by the classes that draw from it. It is
// safe for concurrent use; every method is cheap (no API call).
type Budget struct {
	// ledgerHandle lets the SDK's packages reach l (ledger.Of).
	ledgerHandle
	l *ledger.Ledger
	// pool is set for a node-pool budget, whose total follows its nodes.
	pool *nodePool
	// object is set for a budget that follows a SliceBudget (FromObject).
	object *objectBudget
}

type options struct {
	consumerLimit corev1.ResourceList
	oldestFirst   bool
	preemption    bool
	evictAfter    time.Duration
	// A cohort's member (New only; see cohort.go): its name.
	cohort             string
	borrowing, lending corev1.ResourceList
	reclaim            v1alpha1.CohortReclaimPolicy
	// Node pools only.
	resources []corev1.ResourceName
	reserve   corev1.ResourceList
	share     int
	localPods bool
	errs      []error
}

// WithConsumerLimit caps what one consumer holds from the budget, across
// every class drawing from it, per resource limit names: an offer past it is
// Denied with ReasonConsumerLimit (an Accepted slice keeps its offer) and
// waits, and is admitted when that consumer's holding drops. The consumer is
// the trusted one of resourceslice.Consumer: the tenant namespace's
// liqo.io/remote-cluster-id, or the namespace, never a claim on the slice.
func WithConsumerLimit(limit corev1.ResourceList) SharedOption {
	return optionFunc(func(o *options) {
		if len(limit) == 0 {
			o.errs = append(o.errs, errors.New("empty consumer limit"))
			return
		}
		o.consumerLimit = limit.DeepCopy()
	})
}

// WithOldestFirst admits waiting slices in plain creation order. By
// default, waiting slices that fit are admitted consumer by consumer, the
// consumer holding the least (by its dominant share of the budget) first,
// oldest first within one consumer, so that one consumer's burst cannot
// starve another's single slice. With one consumer both orders are the
// same.
func WithOldestFirst() ObjectOption {
	return optionFunc(func(o *options) { o.oldestFirst = true })
}

// WithPreemption lets a slice that waits in the budget reclaim capacity
// from Accepted slices of strictly lower priority (resourceslice.WithPriority):
// victims are the lowest priority first, then the consumer holding the
// largest dominant share, then the newest slice, each shrunk by at most
// what the waiter still lacks, per resource. A victim stays Accepted with
// the smaller offer and reason ReasonReclaimed (one status patch and a
// Warning event), and its handler's offers are capped at what it keeps
// until the waiter is admitted. No victim is touched unless the waiter
// would fit once its victims shrink, in every budget its class draws from
// and under its consumer's limit in each, and equal priorities never
// preempt. What is reclaimed is promised to the waiter; it is admitted once
// the victims hold less, their running pods included: no running pod is
// evicted. A waiter that leaves or can no longer fit (a limit or total cut
// below it) gives its victims back what was taken for it, and one that
// lacks less gives back the rest.
func WithPreemption() SharedOption {
	return optionFunc(func(o *options) { o.preemption = true })
}

// WithEvictionAfter lets the budget delete running pods, which it never
// does otherwise: a slice shrunk with ReasonReclaimed (WithPreemption, a
// consumer's limit, a pool that fell) whose running ShadowPods still use
// more than it keeps d after the shrink has ShadowPods deleted, the newest
// first (skipping one that charges nothing still over), until the rest
// fit, with a Warning event Evicted on the slice for each. The deletion
// carries the pod's UID as a precondition, so a pod recreated under the
// same name is not deleted. It needs the delete verb on
// shadowpods.offloading.liqo.io, which nothing else needs; a refused
// deletion is a Warning event EvictionFailed and is retried. d counts
// from the shrink as the current leader saw it: a failover restarts it.
// It returns an error from New or NewNodePool for d ≤ 0.
func WithEvictionAfter(d time.Duration) SharedOption {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.errs = append(o.errs, fmt.Errorf("eviction after %s: must be positive", d))
			return
		}
		o.evictAfter = d
	})
}

// ledgerOptions are the ledger's options of o.
func (o options) ledgerOptions() ledger.Options {
	return ledger.Options{ConsumerLimit: o.consumerLimit, OldestFirst: o.oldestFirst, Preemption: o.preemption,
		EvictionAfter: o.evictAfter, BorrowingLimit: o.borrowing, LendingLimit: o.lending,
		ReclaimWithinCohort: ledger.ReclaimPolicy(o.reclaim)}
}

// New returns a Budget named name over total. The budget limits exactly
// the resources total names: a resource it does not name is not limited
// by it, and one named with zero admits none of it. It returns an error for
// an empty name, an empty total (it would limit nothing), a negative
// quantity, a resource name Kubernetes refuses (neither standard, such as
// cpu or hugepages-2Mi, nor domain-qualified, such as nvidia.com/gpu: "cpus"
// would limit nothing) in total or an option, or a bad option.
func New(name string, total corev1.ResourceList, opts ...Option) (*Budget, error) {
	o, err := build(opts, Option.applyToNew)
	if c := o.cohortOptions(); err == nil && o.cohort == "" && len(c) > 0 {
		err = fmt.Errorf("%s: only for a member of a cohort (add WithCohort)", strings.Join(c, ", "))
	}
	if err == nil {
		err = checkResourceNames("total", namesOf(total)...)
	}
	if err == nil {
		err = o.checkNames()
	}
	if err != nil {
		return nil, fmt.Errorf("budget %q: %w", name, err)
	}
	l, err := ledger.New(name, total, o.ledgerOptions())
	if err != nil {
		return nil, err
	}
	if o.cohort != "" {
		l.SetCohortName(o.cohort) // met once a manager serves the budget
	}
	return &Budget{ledgerHandle: ledger.NewHandle(l), l: l}, nil
}

// Name returns the budget's name.
func (b *Budget) Name() string { return b.l.Name() }

// Total returns a copy of the capacity.
func (b *Budget) Total() corev1.ResourceList { return b.l.Total() }

// Used returns what the budget's slices hold, per limited resource, as the
// cluster shows it (their Accepted offers and Liqo's Quotas), plus the
// admissions whose writes are in flight or not yet seen by the watch.
func (b *Budget) Used() corev1.ResourceList { return b.l.Used() }

// Free returns, per resource in Total, total − used, never below zero; for
// a member of a cohort, what its slices may still take there (see WithCohort).
func (b *Budget) Free() corev1.ResourceList { return b.l.Free() }

// Borrowed returns what the budget's slices hold beyond its total, per
// limited resource: borrowed from its cohort (zero outside one).
func (b *Budget) Borrowed() corev1.ResourceList { return b.l.Snapshot().Borrowed }

// Lent returns what other members' slices hold of the budget's total, per
// limited resource (zero outside a cohort): the cohort's borrowed amount
// split among the members that leave lendable capacity idle, in
// proportion to what each leaves (see WithCohort).
func (b *Budget) Lent() corev1.ResourceList { return b.l.Snapshot().Lent }

// SetTotal changes the capacity at run time. A resource the budget limits
// that total does not name becomes zero: it is never unlimited. Growing it
// re-evaluates waiting slices. Shrinking it admits nothing new until usage
// fits, and never revokes an existing acceptance by itself. It returns an
// error, and keeps the old total, for a negative quantity, a resource the
// budget was not created with, a node-pool budget (whose total follows
// its nodes), or a budget from FromObject (edit the SliceBudget's
// spec.total).
func (b *Budget) SetTotal(total corev1.ResourceList) error {
	if b.pool != nil {
		return fmt.Errorf("budget %q follows its nodes: its total cannot be set", b.l.Name())
	}
	if b.object != nil {
		return fmt.Errorf("budget %q follows SliceBudget %q: edit its spec.total", b.l.Name(), b.object.name)
	}
	if err := checkResourceNames("total", namesOf(total)...); err != nil {
		return fmt.Errorf("budget %q: %w", b.l.Name(), err)
	}
	return b.l.SetTotal(total)
}

// SetConsumerLimit sets what one consumer (its trusted cluster ID, see
// resourceslice.Consumer) may hold from the budget at run time, overriding
// WithConsumerLimit for it; an empty list removes the override. Lowered
// below what the consumer holds, its slices are shrunk, newest first, by
// what it holds beyond the limit: each stays Accepted with a smaller offer,
// reason ReasonReclaimed and a Warning event, Liqo shrinks its Quota and
// virtual node, and the capacity frees as the consumer's running pods end
// (none is evicted). SetConsumerLimit("globex", cpu 0) takes back all
// globex holds.
//
// An override for a consumer the budget knows no slice of is valid and
// kept: it applies when that consumer's first slice appears (set limits
// before a new consumer peers). So that a mistyped ID is found, every call
// is logged on the logger of the manager whose classes draw from the budget
// (calls made before that are logged when the first class is added), the
// line saying when the budget knows no slice of the consumer, and the
// overrides in force are the gauge
// sliceclass_budget_consumer_limit{budget,consumer,resource}.
//
// It returns an error, and changes nothing, for a budget from FromObject
// (edit the SliceBudget's spec.consumerLimits), an empty consumer or a
// negative quantity ("negative quantity in consumer limit of "globex":
// cpu=-1").
func (b *Budget) SetConsumerLimit(consumer string, limit corev1.ResourceList) error {
	if b.object != nil {
		return fmt.Errorf("budget %q follows SliceBudget %q: edit its spec.consumerLimits (kubectl edit slicebudget %s)",
			b.l.Name(), b.object.name, b.object.name)
	}
	if err := checkResourceNames(fmt.Sprintf("consumer limit of %q", consumer), namesOf(limit)...); err != nil {
		return fmt.Errorf("budget %q: %w", b.l.Name(), err)
	}
	return b.l.SetConsumerLimit(consumer, limit)
}

// ledgerHandle is embedded under an unexported name: nothing of it shows
// in the package's documentation.
type ledgerHandle = ledger.Handle
