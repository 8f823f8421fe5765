package resourceslice

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/events"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label keys Liqo's CRD replicator sets on the provider's copy of a slice.
const (
	// LabelOriginID holds the cluster ID of the consumer that created the slice.
	LabelOriginID = "liqo.io/originID"
	// LabelReplicated is "true" on a slice replicated from a consumer.
	LabelReplicated = "liqo.io/replicated"
	// LabelRemoteClusterID holds, on a Tenant, the consumer's cluster ID.
	LabelRemoteClusterID = "liqo.io/remote-cluster-id"
)

// Defaults for the options.
const (
	DefaultMaxConcurrentReconciles = 1
	DefaultBackoffBase             = 50 * time.Millisecond
	DefaultBackoffMax              = 5 * time.Minute
)

// Option configures a class controller. Options are validated eagerly by
// NewReconciler and AddToManager.
type Option func(*config)

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

	errs []error
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		maxConcurrent: DefaultMaxConcurrentReconciles,
		backoffBase:   DefaultBackoffBase,
		backoffMax:    DefaultBackoffMax,
		selector:      ReplicatedSelector(),
		authGate:      true,
		tenantRule:    true,
		registerer:    ctrlmetrics.Registry,
	}
	for _, o := range opts {
		if o == nil {
			c.errs = append(c.errs, errors.New("nil Option"))
			continue
		}
		o(c)
	}
	if c.maxConcurrent < 1 {
		c.errs = append(c.errs, fmt.Errorf("max concurrent reconciles must be at least 1, got %d", c.maxConcurrent))
	}
	if c.backoffBase <= 0 || c.backoffMax < c.backoffBase {
		c.errs = append(c.errs, fmt.Errorf("retry backoff needs 0 < base <= max, got base %s max %s", c.backoffBase, c.backoffMax))
	}
	if c.resync < 0 {
		c.errs = append(c.errs, fmt.Errorf("resync period must not be negative, got %s", c.resync))
	}
	return c, errors.Join(c.errs...)
}

// ReplicatedSelector selects slices Liqo replicated into this cluster from a
// consumer: label liqo.io/originID exists and liqo.io/replicated=true. It is
// the default selector.
func ReplicatedSelector() labels.Selector {
	origin, _ := labels.NewRequirement(LabelOriginID, selection.Exists, nil)
	replicated, _ := labels.NewRequirement(LabelReplicated, selection.Equals, []string{"true"})
	return labels.NewSelector().Add(*origin, *replicated)
}

// WithMaxConcurrentReconciles sets how many slices of the class are decided
// in parallel (default 1). Above 1 the handler must be safe for concurrent
// use.
func WithMaxConcurrentReconciles(n int) Option {
	return func(c *config) { c.maxConcurrent = n }
}

// WithRetryBackoff sets the per-slice exponential backoff for retries after
// an error and after a write conflict (default 50ms doubling up to 5m).
func WithRetryBackoff(base, maxDelay time.Duration) Option {
	return func(c *config) { c.backoffBase, c.backoffMax = base, maxDelay }
}

// WithSelector replaces the default label selector (ReplicatedSelector).
// labels.Everything() serves every slice of the class, e.g. slices created
// locally in tests.
func WithSelector(s labels.Selector) Option {
	return func(c *config) {
		if s == nil {
			c.errs = append(c.errs, errors.New("nil label selector; use labels.Everything() to select all slices"))
			return
		}
		c.selector = s
	}
}

// WithoutAuthenticationGate lets the handler decide slices whose
// Authentication condition is not (yet) Accepted. By default they wait.
func WithoutAuthenticationGate() Option {
	return func(c *config) { c.authGate = false }
}

// WithoutTenantRule turns off Liqo's tenant rule (Drained or Cordoned tenants'
// slices Denied) and the Tenant watch. Only do this when the handler applies
// its own rule: otherwise the controller re-accepts slices an operator drained.
func WithoutTenantRule() Option {
	return func(c *config) { c.tenantRule = false }
}

// WithResyncPeriod re-evaluates every decided slice of the class at least
// this often, for handlers whose answer depends on state outside the slice.
// Zero (the default) re-evaluates only on relevant changes.
func WithResyncPeriod(d time.Duration) Option {
	return func(c *config) { c.resync = d }
}

// WithEventRecorder overrides the recorder (by default the manager's, named
// after the controller; none for a bare NewReconciler).
func WithEventRecorder(r events.EventRecorder) Option {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, errors.New("nil event recorder"))
			return
		}
		c.recorder = r
	}
}

// WithLogger overrides the controller's base logger (by default the
// manager's). The reconciler logs through the logger found in the context.
func WithLogger(l logr.Logger) Option {
	return func(c *config) { c.logger = &l }
}

// WithMetricsRegisterer registers the SDK's collectors on r instead of
// controller-runtime's registry. Collectors already registered there are
// reused, so many classes share one set.
func WithMetricsRegisterer(r prometheus.Registerer) Option {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, errors.New("nil metrics registerer"))
			return
		}
		c.registerer = r
	}
}
