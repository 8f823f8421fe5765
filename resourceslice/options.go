package resourceslice

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// Label keys Liqo's CRD replicator sets on the provider's copy of a slice
// (labelOriginID, labelReplicated) and on a tenant namespace and Tenant
// (labelRemoteClusterID).
const (
	labelOriginID        = "liqo.io/originID"
	labelReplicated      = "liqo.io/replicated"
	labelRemoteClusterID = sliceview.LabelRemoteClusterID
)

// Defaults for the options.
const (
	defaultMaxConcurrentReconciles = 1
	defaultBackoffBase             = 50 * time.Millisecond
	defaultBackoffMax              = 5 * time.Minute
)

// Option configures a class whose controller the SDK builds: AddToManager,
// NewClassSet and ClassSet.Serve take any Option. Options come in two
// kinds, each documented as such, and the compiler tells them apart, as
// controller-runtime's builder tells its ForOption from its OwnsOption:
//
//   - decision options (WithSelector, WithoutAuthenticationGate,
//     WithoutTenantRule, WithBudget, WithPriority, WithMaxRetries,
//     WithHandlerTimeout, WithDryRun, WithDecisionEvents,
//     WithMetricsRegisterer, WithResyncPeriod,
//     WithOwnedTypes) say how slices are decided and reported: they are
//     DecisionOptions, which every constructor takes, the test kit's
//     harness (package testing) included.
//   - controller options (WithMaxConcurrentReconciles, WithRetryBackoff,
//     WithLogger, WithWatch, WithClassLease) configure the controller the
//     SDK builds and what runs beside it: they are Options only, so
//     the harness, which runs the controller itself, does not compile with
//     one.
//
// Options are validated eagerly: a bad value is an error naming the class.
// A list of both kinds is a []Option.
type Option interface {
	applyToClass(c *config)
}

// DecisionOption is an Option that says how a class's slices are decided
// and reported, whoever builds the controller: the test kit's harness takes these
// only.
type DecisionOption func(*config)

func (o DecisionOption) applyToClass(c *config) {
	if o == nil {
		c.errs = append(c.errs, errNilOption)
		return
	}
	o(c)
}

// controllerOption is an Option that configures the controller the SDK
// builds (AddToManager, ClassSet), not the decisions.
type controllerOption func(*config)

func (o controllerOption) applyToClass(c *config) { DecisionOption(o).applyToClass(c) }

var errNilOption = errors.New("nil Option")

type config struct {
	maxConcurrent int
	backoffBase   time.Duration
	backoffMax    time.Duration
	selector      labels.Selector
	authGate      bool
	tenantRule    bool
	resync        time.Duration
	recorder      events.EventRecorder
	logger        *logr.Logger
	registerer    prometheus.Registerer
	events        DecisionEvents
	budgets       []*budget.Budget
	maxRetries    int
	timeout       time.Duration
	dryRun        bool
	watches       []watchSpec
	// leaseNamespace holds the class Lease; "" for none.
	leaseNamespace string
	// priority is WithPriority's: the class's priority in its budgets.
	priority int32
	// ownedTypes are WithOwnedTypes' declared types.
	ownedTypes []client.Object
	// maxConcurrentGiven: WithMaxConcurrentReconciles was given, and
	// overrides the manager's controller defaults.
	maxConcurrentGiven bool

	errs []error
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		maxConcurrent: defaultMaxConcurrentReconciles,
		backoffBase:   defaultBackoffBase,
		backoffMax:    defaultBackoffMax,
		selector:      replicatedSelector(),
		authGate:      true,
		tenantRule:    true,
		registerer:    ctrlmetrics.Registry,
		events:        DecisionEventsAll,
	}
	for _, o := range opts {
		if o == nil {
			c.errs = append(c.errs, errNilOption)
			continue
		}
		o.applyToClass(c)
	}
	if c.maxConcurrent < 1 {
		c.errs = append(c.errs, fmt.Errorf("max concurrent reconciles must be at least 1, got %d", c.maxConcurrent))
	}
	if c.backoffBase <= 0 || c.backoffMax < c.backoffBase {
		c.errs = append(c.errs, fmt.Errorf("retry backoff needs 0 < base <= max, got base %s max %s", c.backoffBase, c.backoffMax))
	}
	switch c.events {
	case DecisionEventsAll, DecisionEventsDenied, DecisionEventsNone:
	default:
		c.errs = append(c.errs, fmt.Errorf("unknown decision events mode %d", c.events))
	}
	if c.maxRetries < 0 {
		c.errs = append(c.errs, fmt.Errorf("max retries must not be negative, got %d", c.maxRetries))
	}
	if c.timeout < 0 {
		c.errs = append(c.errs, fmt.Errorf("handler timeout must not be negative, got %s", c.timeout))
	}
	if c.resync < 0 {
		c.errs = append(c.errs, fmt.Errorf("resync period must not be negative, got %s", c.resync))
	}
	return c, errors.Join(c.errs...)
}

// replicatedSelector selects slices Liqo replicated into this cluster from a
// consumer: label liqo.io/originID exists and liqo.io/replicated=true. It is
// the default selector.
func replicatedSelector() labels.Selector {
	origin, _ := labels.NewRequirement(labelOriginID, selection.Exists, nil)
	replicated, _ := labels.NewRequirement(labelReplicated, selection.Equals, []string{"true"})
	return labels.NewSelector().Add(*origin, *replicated)
}

// WithMaxConcurrentReconciles (a controller option) sets how many slices of
// the class are decided in parallel (default: the manager's
// ctrl.Options.Controller.MaxConcurrentReconciles, else 1). Above 1 the
// handler must be safe for concurrent use.
func WithMaxConcurrentReconciles(n int) Option {
	return controllerOption(func(c *config) { c.maxConcurrentGiven = true; c.maxConcurrent = n })
}

// WithRetryBackoff (a controller option) sets the per-slice exponential backoff for retries after
// an error and after a write conflict (default 50ms doubling up to 5m).
func WithRetryBackoff(base, maxDelay time.Duration) Option {
	return controllerOption(func(c *config) { c.backoffBase, c.backoffMax = base, maxDelay })
}

// WithPriority (a decision option) sets the class's priority in every
// budget it draws from (default 0; classes sharing a budget may differ):
// its waiting slices are promised freed capacity before those of lower
// priorities, and, in a budget built with budget.WithPreemption, may
// reclaim capacity from Accepted slices of strictly lower priority.
func WithPriority(p int32) DecisionOption {
	return func(c *config) { c.priority = p }
}

// WithSelector (a decision option) replaces the default label selector:
// slices Liqo replicated into this cluster from a consumer (label
// liqo.io/originID exists and liqo.io/replicated=true). labels.Everything()
// serves every slice of the class, e.g. slices created locally in tests.
func WithSelector(s labels.Selector) DecisionOption {
	return func(c *config) {
		if s == nil {
			c.errs = append(c.errs, errors.New("nil label selector; use labels.Everything() to select all slices"))
			return
		}
		c.selector = s
	}
}

// WithoutAuthenticationGate (a decision option) lets the handler decide slices whose
// Authentication condition is not (yet) Accepted. By default they wait.
func WithoutAuthenticationGate() DecisionOption {
	return func(c *config) { c.authGate = false }
}

// WithoutTenantRule (a decision option) turns off Liqo's tenant rule (Drained or Cordoned tenants'
// slices Denied) and the Tenant watch. Only do this when the handler applies
// its own rule: otherwise the controller re-accepts slices an operator drained.
func WithoutTenantRule() DecisionOption {
	return func(c *config) { c.tenantRule = false }
}

// WithResyncPeriod (a decision option) is the class's one period: every
// decided slice is re-evaluated at least this often (for handlers whose
// answer depends on state outside the slice), a slice WithMaxRetries gave
// up on is tried again after it, and a handler.Inventory is swept again at
// it. Zero (the default) re-evaluates only on relevant changes and sweeps
// once, at start.
func WithResyncPeriod(d time.Duration) DecisionOption {
	return func(c *config) { c.resync = d }
}

// withEventRecorder (a decision option, for the test kit's harness, which
// records the events it reports) overrides the recorder (by default the manager's, named
// after the controller; the harness records its own).
func withEventRecorder(r events.EventRecorder) DecisionOption {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, errors.New("nil event recorder"))
			return
		}
		c.recorder = r
	}
}

// WithLogger (a controller option) sends every log line of the class's controller to l instead of
// the manager's logger: controller-runtime's own lines (start, errors
// returned by Reconcile) and the reconciler's, which read the logger from
// the context. Each line carries the controller name and the slice's
// namespace and name.
func WithLogger(l logr.Logger) Option {
	return controllerOption(func(c *config) { c.logger = &l })
}

// WithMetricsRegisterer (a decision option) registers the SDK's collectors
// on r instead of controller-runtime's registry. Collectors already
// registered there are reused, so many classes share one set.
// AddUnservedReporter, which takes no option, uses controller-runtime's.
func WithMetricsRegisterer(r prometheus.Registerer) DecisionOption {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, errors.New("nil metrics registerer"))
			return
		}
		c.registerer = r
	}
}

// DecisionEvents says which decision transitions get an event.
type DecisionEvents int

// Decision event modes for WithDecisionEvents.
const (
	// DecisionEventsAll records an event on every decision transition: a
	// Normal event for Accepted, a Warning for Denied (the default).
	DecisionEventsAll DecisionEvents = iota
	// DecisionEventsDenied records only denials (Warning events).
	DecisionEventsDenied
	// DecisionEventsNone records no decision event; the Resources condition
	// and the sliceclass_decisions_total metric still say what was decided.
	// Warnings about faults (HandlerFailed, ChangesDiscarded, ...) are
	// recorded whatever the mode.
	DecisionEventsNone
)

// WithDecisionEvents (a decision option) chooses which decision transitions are recorded as
// events. An event costs one API write; at high decision rates,
// DecisionEventsDenied or DecisionEventsNone save it.
func WithDecisionEvents(mode DecisionEvents) DecisionOption {
	return func(c *config) { c.events = mode }
}

// WithBudget (a decision option) makes the class draw from b: an offer the handler accepts is
// admitted only if it fits what b has free (and keeps its consumer within
// b's consumer limit), atomically across workers and across every class
// sharing b in this manager, and is written Denied with reason
// budget.ReasonExhausted (or budget.ReasonConsumerLimit, or
// budget.ReasonUnavailable when b admits nothing new) otherwise. Given
// more than once, an offer is admitted only if it fits every budget of the
// class, all at once (never a partial hold), and a denial names the budget
// that refused: classes may share any subset of budgets (gold ⊂ premium ⊂
// the whole provider). See package budget for what a budget counts and the
// order waiting slices are admitted in. A budget lives in one manager: two
// managers must not share one.
func WithBudget(b *budget.Budget) DecisionOption {
	return func(c *config) {
		if b == nil {
			c.errs = append(c.errs, errors.New("nil budget"))
			return
		}
		for _, x := range c.budgets {
			if x == b {
				c.errs = append(c.errs, fmt.Errorf("budget %q given twice", b.Name()))
				return
			}
		}
		c.budgets = append(c.budgets, b)
	}
}

// WithMaxRetries (a decision option) bounds a failing handler: a slice whose handler returns an
// error (or panics, or times out) n times in a row is not retried after the
// n-th failure; a Warning event with reason "GaveUp" says so and
// sliceclass_handler_gave_up_total counts it. The slice is tried again on its
// next relevant change, at the resync period (WithResyncPeriod), or on a
// WithWatch pass. Zero (the default) retries without limit.
func WithMaxRetries(n int) DecisionOption {
	return func(c *config) { c.maxRetries = n }
}

// WithHandlerTimeout (a decision option) gives each Handle call a context
// with this deadline. A call that returns after the deadline counts as one
// failure: one HandlerFailed Warning event saying it timed out, retried
// with backoff, and whatever it returned is discarded, never written. As
// with controller-runtime's ReconciliationTimeout, the SDK waits for the
// call to return before the slice can be decided again: a handler is never
// called twice at once for one slice, and one that ignores its context
// holds its worker until it returns. Zero (the default) sets no deadline.
func WithHandlerTimeout(d time.Duration) DecisionOption {
	return func(c *config) { c.timeout = d }
}

// WithDryRun (a decision option) decides the class's slices without ever writing them: each
// decision is made by the handler, validated, logged, counted in
// sliceclass_decisions_total under the outcomes "dryrun-accepted" and
// "dryrun-denied", and each would-be transition is a Normal event with
// action "DryRun". No status write is made, no release hook is called, and a
// budget is consulted but not charged. A dry-run manager may serve a class
// side by side with the live one (another process) to try a new policy.
func WithDryRun() DecisionOption {
	return func(c *config) { c.dryRun = true }
}

// watchSpec is one WithWatch input.
type watchSpec struct {
	obj   client.Object
	preds []predicate.Predicate
}

// WithWatch (a controller option) re-evaluates every slice of the class when an object of obj's
// type changes (and passes preds): a ConfigMap holding caps, the Nodes whose
// capacity a policy shares. Bursts are coalesced into one pass (100 Node
// updates within a second cause one pass, not 100), and, as always, only
// slices whose decision or offer changes are written. The manager's cache
// must be able to list and watch obj's type (RBAC and cache options).
func WithWatch(obj client.Object, preds ...predicate.Predicate) Option {
	return controllerOption(func(c *config) {
		if obj == nil {
			c.errs = append(c.errs, errors.New("nil object to watch"))
			return
		}
		c.watches = append(c.watches, watchSpec{obj: obj, preds: preds})
	})
}

// WithClassLease (a controller option) makes the class's controller hold, while it serves the
// class (on the leader only, with leader election), a coordination.k8s.io
// Lease named LeaseName(class) in namespace, labelled LabelClass=<class>
// and renewed every 10 seconds (LeaseDuration 40 seconds); it is deleted on
// Stop or a clean shutdown. `kubectl get leases -l sliceclass.io/class` then
// lists the served classes and which pod serves each, and
// AddUnservedReporter reads them. It needs get/create/update/delete on
// leases in namespace.
func WithClassLease(namespace string) Option {
	return controllerOption(func(c *config) {
		if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
			c.errs = append(c.errs, fmt.Errorf("class lease namespace %q: %v", namespace, errs))
			return
		}
		c.leaseNamespace = namespace
	})
}
