package classlease

import (
	"context"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Unserved-class reporting.
const (
	// ReasonNoClassController is the Warning event on a slice whose class
	// nobody serves.
	ReasonNoClassController = "NoClassController"
	// MetricUnservedSlices counts slices whose class nobody serves, by class.
	MetricUnservedSlices = "sliceclass_unserved_slices"
	// MetricUnservedOldest is the age in seconds of the oldest such slice,
	// by class.
	MetricUnservedOldest = "sliceclass_unserved_oldest_seconds"
	// ReporterName names the reporter's event recorder and logger.
	ReporterName = "sliceclass-unserved-reporter"
)

// ReporterConfig is what a Reporter reads and writes.
type ReporterConfig struct {
	// Slices lists ResourceSlices (the manager's cache); Leases lists
	// class Leases (the API server: no Lease informer is started).
	Slices, Leases client.Reader
	// Recorder records the NoClassController events.
	Recorder events.EventRecorder
	// Synced waits for the slice cache to sync.
	Synced func(context.Context) bool
	// ClassOf is the slice's effective class.
	ClassOf func(*authv1beta1.ResourceSlice) string
	// Replicated selects the slices replicated from a consumer: only they
	// wait for a provider's class controller.
	Replicated labels.Selector
	// Namespace holds the class Leases; After is how long a slice stays
	// unserved before it is reported.
	Namespace string
	After     time.Duration
	// Count and Oldest are the gauges MetricUnservedSlices and
	// MetricUnservedOldest, by class.
	Count, Oldest *prometheus.GaugeVec
	// Clock tells the time (nil: time.Now). A check reads it once, after
	// it has listed, so that a slice is never dated before it existed.
	Clock func() time.Time
}

// NewReporter returns the reporter of cfg; add it to a manager. It reports
// a slice whose effective class is neither Liqo's own ("", "default") nor
// held by a live Lease for longer than After with one Warning event
// NoClassController, and counts such slices in the gauges. A class with no
// such slice has no series: the label values are what consumers write in
// spec.class, so a class's series is deleted at the first check that finds
// none of its slices unserved (gone, or served now).
func NewReporter(cfg ReporterConfig) (*Reporter, error) {
	if cfg.Namespace == "" || cfg.After <= 0 {
		return nil, fmt.Errorf("unserved reporter: need a namespace and a positive delay, got %q and %s", cfg.Namespace, cfg.After)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Reporter{cfg: cfg, since: map[types.NamespacedName]time.Time{}, reported: map[types.NamespacedName]bool{}}, nil
}

// NewGauges returns the reporter's two gauges, unregistered.
func NewGauges() (count, oldest *prometheus.GaugeVec) {
	count = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricUnservedSlices, Help: "Slices whose class no controller serves (no live class Lease), by class.",
	}, []string{"class"})
	oldest = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricUnservedOldest, Help: "Age in seconds of the oldest slice whose class no controller serves, by class.",
	}, []string{"class"})
	return count, oldest
}

// Reporter flags the slices nobody serves; it runs on the leader only.
type Reporter struct {
	cfg ReporterConfig

	// since is when a slice was first seen unserved; reported whether its
	// event was recorded; classes are the classes with a series now.
	since    map[types.NamespacedName]time.Time
	reported map[types.NamespacedName]bool
	classes  map[string]bool
}

// Start implements manager.Runnable: a check every after/4 (at least every
// second, at most every 15 seconds).
func (u *Reporter) Start(ctx context.Context) error {
	if !u.cfg.Synced(ctx) {
		return nil
	}
	period := min(max(u.cfg.After/4, time.Second), 15*time.Second)
	for {
		if err := u.Check(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).WithName(ReporterName).Error(err, "cannot check for unserved slices")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(period):
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (*Reporter) NeedLeaderElection() bool { return true }

// Check runs one check. Its time is read from the clock after both lists:
// a time read before them could be older than a slice the list returns, so
// the slice's first sighting, and the delay counted from it, would start
// before the slice existed and it would be flagged early.
func (u *Reporter) Check(ctx context.Context) error {
	var leases coordinationv1.LeaseList
	if err := u.cfg.Leases.List(ctx, &leases, client.InNamespace(u.cfg.Namespace), client.HasLabels{Label}); err != nil {
		return fmt.Errorf("listing class Leases in %q: %w", u.cfg.Namespace, err)
	}
	var slices authv1beta1.ResourceSliceList
	if err := u.cfg.Slices.List(ctx, &slices); err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	now := u.cfg.Clock()
	// servedUntil is, per class, when the last Lease seen for it expires
	// (or expired): a slice is unserved from then at the earliest, even if
	// an earlier check, reading a cache that had not yet seen the Lease,
	// found none.
	served := map[string]bool{}
	servedUntil := map[string]time.Time{}
	for i := range leases.Items {
		class := leases.Items[i].Labels[Label]
		if until, held := heldUntil(&leases.Items[i]); held && until.After(servedUntil[class]) {
			servedUntil[class] = until
		}
		if Live(&leases.Items[i], now) {
			served[class] = true
		}
	}
	type agg struct {
		n      int
		oldest time.Duration
	}
	byClass := map[string]*agg{}
	replicated := u.cfg.Replicated
	// since and reported are rebuilt at every check from the slices
	// unserved now, rather than pruned: a Go map never gives back its
	// buckets, so a burst of slices gone would otherwise stay in the heap
	// for good.
	since, reported := map[types.NamespacedName]time.Time{}, map[types.NamespacedName]bool{}
	for i := range slices.Items {
		rs := &slices.Items[i]
		class := u.cfg.ClassOf(rs)
		// Only slices replicated from a consumer wait for a provider's
		// class controller; a slice created locally is outgoing.
		if !replicated.Matches(labels.Set(rs.Labels)) {
			continue
		}
		if class == string(authv1beta1.ResourceSliceClassUnknown) || class == string(authv1beta1.ResourceSliceClassDefault) ||
			served[class] || !rs.DeletionTimestamp.IsZero() {
			continue
		}
		key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
		first, ok := u.since[key]
		if !ok {
			first = now
		}
		if until := servedUntil[class]; first.Before(until) {
			first = until
		}
		since[key] = first
		if now.Sub(first) < u.cfg.After {
			continue
		}
		a := byClass[class]
		if a == nil {
			a = &agg{}
			byClass[class] = a
		}
		a.n++
		if age := now.Sub(rs.CreationTimestamp.Time); age > a.oldest {
			a.oldest = age
		}
		reported[key] = true
		if !u.reported[key] {
			u.cfg.Recorder.Eventf(rs, nil, corev1.EventTypeWarning, ReasonNoClassController, "Report",
				"no controller serves class %q: no live Lease %s in namespace %s for %s; nobody decides or maintains this slice's resources",
				class, Name(class), u.cfg.Namespace, now.Sub(first).Round(time.Second))
		}
	}
	u.since, u.reported = since, reported
	// A class's label value is whatever a consumer wrote in spec.class: a
	// class with no unserved slice now (its slices gone, or served) loses
	// its series, so made-up classes leave nothing behind.
	for class := range u.classes {
		if byClass[class] == nil {
			u.cfg.Count.DeleteLabelValues(class)
			u.cfg.Oldest.DeleteLabelValues(class)
		}
	}
	u.classes = map[string]bool{}
	for class, a := range byClass {
		u.classes[class] = true
		u.cfg.Count.WithLabelValues(class).Set(float64(a.n))
		u.cfg.Oldest.WithLabelValues(class).Set(a.oldest.Seconds())
	}
	return nil
}
