package resourceslice

import (
	"context"
	"errors"
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
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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

// AddUnservedReporter makes visible the slices nobody serves. It watches
// the ResourceSlices replicated from consumers (ReplicatedSelector; through
// the manager's cache) and reads the class Leases
// in namespace (see WithClassLease; read from the API server, no Lease
// informer). A slice whose effective class is neither Liqo's own ("",
// "default") nor held by a live Lease for longer than after gets one
// Warning event NoClassController naming the class, and the gauges
// sliceclass_unserved_slices{class} and sliceclass_unserved_oldest_seconds
// {class} count such slices. When a controller for the class appears, the
// gauges drop to zero with no further event. It writes nothing to slices.
// It runs on the leader only. It needs list on leases in namespace and
// create on events.
func AddUnservedReporter(mgr manager.Manager, namespace string, after time.Duration) error {
	if mgr == nil {
		return errors.New("unserved reporter: nil manager")
	}
	if namespace == "" || after <= 0 {
		return fmt.Errorf("unserved reporter: need a namespace and a positive delay, got %q and %s", namespace, after)
	}
	if err := classes.addTypes(mgr, true); err != nil {
		return fmt.Errorf("unserved reporter: %w", err)
	}
	count := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricUnservedSlices, Help: "Slices whose class no controller serves (no live class Lease), by class.",
	}, []string{"class"})
	oldest := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricUnservedOldest, Help: "Age in seconds of the oldest slice whose class no controller serves, by class.",
	}, []string{"class"})
	var err error
	if count, err = register(ctrlmetrics.Registry, count); err != nil {
		return err
	}
	if oldest, err = register(ctrlmetrics.Registry, oldest); err != nil {
		return err
	}
	views, err := classes.statusClasses(mgr)
	if err != nil {
		return fmt.Errorf("unserved reporter: %w", err)
	}
	return mgr.Add(&unservedReporter{
		slices: mgr.GetClient(), leases: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder(ReporterName),
		synced: mgr.GetCache().WaitForCacheSync, namespace: namespace, after: after,
		scope: scope{status: views}, count: count, oldest: oldest,
		since: map[types.NamespacedName]time.Time{}, reported: map[types.NamespacedName]bool{},
	})
}

type unservedReporter struct {
	slices    client.Reader
	leases    client.Reader
	recorder  events.EventRecorder
	synced    func(context.Context) bool
	namespace string
	after     time.Duration
	scope     scope // only its effective-class reading is used
	count     *prometheus.GaugeVec
	oldest    *prometheus.GaugeVec

	// since is when a slice was first seen unserved; reported whether its
	// event was recorded.
	since    map[types.NamespacedName]time.Time
	reported map[types.NamespacedName]bool
	classes  map[string]bool
}

// Start implements manager.Runnable: a check every after/4 (at least every
// second, at most every 15 seconds).
func (u *unservedReporter) Start(ctx context.Context) error {
	if !u.synced(ctx) {
		return nil
	}
	period := min(max(u.after/4, time.Second), 15*time.Second)
	for {
		if err := u.check(ctx, time.Now()); err != nil && ctx.Err() == nil {
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
func (*unservedReporter) NeedLeaderElection() bool { return true }

func (u *unservedReporter) check(ctx context.Context, now time.Time) error {
	var leases coordinationv1.LeaseList
	if err := u.leases.List(ctx, &leases, client.InNamespace(u.namespace), client.HasLabels{LabelClass}); err != nil {
		return fmt.Errorf("listing class Leases in %q: %w", u.namespace, err)
	}
	served := map[string]bool{}
	for i := range leases.Items {
		if leaseLive(&leases.Items[i], now) {
			served[leases.Items[i].Labels[LabelClass]] = true
		}
	}
	var slices authv1beta1.ResourceSliceList
	if err := u.slices.List(ctx, &slices); err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	type agg struct {
		n      int
		oldest time.Duration
	}
	byClass := map[string]*agg{}
	replicated := ReplicatedSelector()
	seen := map[types.NamespacedName]bool{}
	for i := range slices.Items {
		rs := &slices.Items[i]
		class := u.scope.classOf(rs)
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
		seen[key] = true
		first, ok := u.since[key]
		if !ok {
			first = now
			u.since[key] = now
		}
		if now.Sub(first) < u.after {
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
		if !u.reported[key] {
			u.reported[key] = true
			u.recorder.Eventf(rs, nil, corev1.EventTypeWarning, ReasonNoClassController, "Report",
				"no controller serves class %q: no live Lease %s in namespace %s for %s; nobody decides or maintains this slice's resources",
				class, LeaseName(class), u.namespace, now.Sub(first).Round(time.Second))
		}
	}
	for key := range u.since {
		if !seen[key] {
			delete(u.since, key)
			delete(u.reported, key)
		}
	}
	// Classes reported before and not now drop to zero.
	for class := range u.classes {
		if byClass[class] == nil {
			u.count.WithLabelValues(class).Set(0)
			u.oldest.WithLabelValues(class).Set(0)
		}
	}
	u.classes = map[string]bool{}
	for class, a := range byClass {
		u.classes[class] = true
		u.count.WithLabelValues(class).Set(float64(a.n))
		u.oldest.WithLabelValues(class).Set(a.oldest.Seconds())
	}
	return nil
}
