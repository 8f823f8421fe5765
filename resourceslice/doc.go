// Package resourceslice runs a Handler as a class controller for Liqo
// ResourceSlices.
//
// # Wiring a class
//
// The scheme is yours: add client-go's types and AddToScheme to it before
// building the manager; every registration checks it, refuses a missing
// type naming the call to add, and never writes it.
//
// The ClassSet is the one object a manager's classes share: build it once
// in main with NewClassSet(mgr), next to the manager, and hold it; its
// classes and their budgets share its status.class view and ShadowPod
// watch. Many classes, one set. A class's controller is built one way,
// reached two ways:
//
//   - ClassSet.Serve(class, h, opts...) serves a class, before or after the
//     manager starts, and ClassSet.Stop stops it, on the manager's
//     informers;
//   - AddToManager(mgr, class, h, opts...) is a ClassSet of one class: a
//     controller that runs while the manager does.
//
// Either way the class's controller is named "resourceslice-<class>" (the
// controller label of controller-runtime's metrics, e.g.
// controller_runtime_reconcile_errors_total{controller="resourceslice-gold"},
// the "controller" key of its logs, the reporter of its events), and its
// status patches' field manager is "sliceclass-<class>" (managedFields say
// which class decided a slice).
//
// Both watch the same inputs with the same predicates (the class's
// slices, old or new object; Tenants for the tenant rule; tenant
// namespaces for the trusted consumer; status.class; budget re-admissions),
// decide the same way, and stop the same way: when the manager stops or
// loses its leader election, the handler's context is cancelled at once, no
// handler call and no status write starts after, a status patch already
// sent has two seconds to be answered, and everything the SDK started
// (feeds, the evictor, class Leases, sweeps) has returned before the
// manager's Start does; ClassSet.Stop alone, the process still leading,
// lets a decision in flight finish and be written. The controller's
// workers, rate limiter and logger are options (WithMaxConcurrentReconciles,
// WithRetryBackoff, WithLogger), its extra inputs WithWatch. Options say
// what they configure: decision options (DecisionOption) say how a slice is
// decided; controller options (workers, backoff, logger, watches, lease)
// say how the controller runs. Both are Options; the test kit (package
// testing), which runs the controller itself, takes decision options only.
//
// # What a class controller does
//
// Each controller:
//
//   - watches ResourceSlices replicated from a consumer (by default, label
//     liqo.io/originID exists and liqo.io/replicated=true) whose effective
//     class (status.class when set, else spec.class, as Liqo's
//     EffectiveClass), on the old or the new object, is its own;
//   - skips slices being deleted, and by default waits until Liqo sets the
//     Authentication condition to Accepted;
//   - by default applies Liqo's tenant rule before calling the handler: a
//     Drained tenant's slices are Denied, a Cordoned tenant's undecided slices
//     are Denied, its decided ones are left alone; Tenant changes re-evaluate
//     the tenant's slices;
//   - calls the handler on a deep copy, at most once at a time per slice,
//     and validates its decision;
//   - merges only the status fields a class controller owns onto the cached
//     object and, when something changed, saves them with one status merge
//     patch that carries the resourceVersion (optimistic lock); when nothing
//     changed it makes no API call;
//   - records an event on each decision transition and exports metrics.
//
// Owned by a class controller: the Resources condition, status.resources,
// status.storageClasses, status.ingressClasses, status.loadBalancerClasses,
// status.nodeLabels and status.nodeSelector. Never written: spec, metadata,
// the Authentication condition, status.authParams, and any status field the
// pinned Liqo types do not know.
//
// # Event and condition reasons
//
// Besides the reasons a handler sets on the Resources condition, the SDK
// uses these (strings, stable; budget.ReasonExhausted,
// budget.ReasonConsumerLimit and budget.ReasonUnavailable are the budget's):
//
//	reason            kind                    when
//	HandlerFailed     Warning event           the handler returned an error, or overran WithHandlerTimeout (once per call); retried with backoff unless terminal
//	HandlerPanicked   Warning event           the handler panicked; the panic became an error
//	NoDecision        Warning event           the handler set no Accepted/Denied Resources condition; not retried
//	InvalidResources  Warning event           a negative quantity, or one beyond int64, in status.resources; not retried
//	ChangesDiscarded  Warning event           the handler changed fields a class controller does not own; they were dropped
//	StatusRejected    Warning event           the API server refused the status patch as invalid; not retried
//	GaveUp            Warning event           WithMaxRetries failures in a row
//	ConsumerMismatch  condition + Warning     the slice's consumer claims disagree with its namespace's; never accepted
//	TenantDrained     condition               the consumer's Tenant is Drained
//	TenantCordoned    condition               the consumer's Tenant is Cordoned and the slice undecided
//	NoClassController Warning event           AddUnservedReporter: nobody serves the slice's class
//
// # Metrics
//
// Registered once, on controller-runtime's registry unless
// WithMetricsRegisterer; controller-runtime's own per-controller metrics
// (named "resourceslice-<class>") come on top:
//
//	name                                      type       labels              what
//	sliceclass_decisions_total                counter    class, outcome      decision transitions written (accepted, denied; dryrun-accepted, dryrun-denied)
//	sliceclass_handler_duration_seconds       histogram  class               time in the handler per call
//	sliceclass_handler_errors_total           counter    class, kind         failures: error, panic, timeout, contract, release
//	sliceclass_handler_gave_up_total          counter    class               slices WithMaxRetries stopped retrying
//	sliceclass_watch_passes_total             counter    class               WithWatch passes
//	sliceclass_budget_total                   gauge      budget, resource    a budget's capacity
//	sliceclass_budget_used                    gauge      budget, resource    what its slices hold (writes in flight included)
//	sliceclass_budget_waiting                 gauge      budget              slices waiting for its capacity
//	sliceclass_budget_borrowed                gauge      budget, resource    a cohort member's: what its slices hold beyond its total
//	sliceclass_budget_lent                    gauge      budget, resource    a cohort member's: what the others' slices hold of its total
//	sliceclass_budget_exhausted_total         counter    class               slices denied or kept from growing for lack of budget
//	sliceclass_budget_consumer_limited_total  counter    class               the same, by a consumer's limit
//	sliceclass_budget_unavailable_total       counter    class               the same, by a budget that admits nothing new
//	sliceclass_budget_consumer_limit          gauge      budget, consumer,   a consumer's own limit (budget.Budget.SetConsumerLimit),
//	                                                     resource            while it lasts
//	sliceclass_consumer_granted               gauge      budget, consumer,   what a consumer's slices hold now (leader only;
//	                                                     resource            docs/metering.md)
//	sliceclass_consumer_in_use                gauge      the same            what its running ShadowPods are charged now
//	sliceclass_consumer_granted_seconds_total counter    the same            the first integrated over time (core-s, byte-s)
//	sliceclass_consumer_in_use_seconds_total  counter    the same            the second integrated over time
//	sliceclass_unserved_slices                gauge      class               AddUnservedReporter: slices nobody serves
//	sliceclass_unserved_oldest_seconds        gauge      class               AddUnservedReporter: age of the oldest
//
// Label values come from the operator (registered classes, budgets,
// SetConsumerLimit's consumers; the metering's consumers are the tenant
// namespaces' IDs, and go 10 minutes after they last held nothing), except the unserved reporter's class,
// which is a slice's spec.class: its series are deleted once the class has
// no unserved slice, so classes consumers make up leave nothing behind.
package resourceslice
