package resourceslice

import (
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sliceclass/sliceclass/internal/classlease"
	"github.com/sliceclass/sliceclass/internal/sliceview"
)

// AddUnservedReporter makes visible the slices nobody serves. It watches
// the ResourceSlices replicated from consumers (through the manager's
// cache) and reads the class Leases in namespace (see WithClassLease; read
// from the API server, no Lease informer). A slice whose effective class is
// neither Liqo's own ("", "default") nor held by a live Lease for longer
// than after gets one Warning event NoClassController naming the class, and
// the gauges sliceclass_unserved_slices{class} and
// sliceclass_unserved_oldest_seconds{class} (on controller-runtime's
// registry) count such slices. When a controller for the class appears, or
// the class's last unserved slice is deleted, the class's series are deleted
// at the next check (every after/4, between 1 and 15 seconds), with no
// further event: the class label is what consumers write in spec.class, so
// made-up classes leave no series behind. It writes nothing to slices.
// It runs on the leader only. It needs list on leases in namespace, and
// create and patch on events (events.k8s.io; a repeated event is a patch),
// and a manager's scheme with Liqo's ResourceSlice and coordination/v1
// Lease (AddToScheme); it never changes the scheme.
func AddUnservedReporter(mgr manager.Manager, namespace string, after time.Duration) error {
	if mgr == nil {
		return errors.New("unserved reporter: nil manager")
	}
	if err := (schemeNeeds{leases: true}).check(mgr.GetScheme()); err != nil {
		return fmt.Errorf("unserved reporter: %w", err)
	}
	count, oldest := classlease.NewGauges()
	var err error
	if count, err = register(ctrlmetrics.Registry, count); err != nil {
		return err
	}
	if oldest, err = register(ctrlmetrics.Registry, oldest); err != nil {
		return err
	}
	views, err := sliceview.NewClasses(mgr) // the reporter's own: it belongs to no set
	if err != nil {
		return fmt.Errorf("unserved reporter: %w", err)
	}
	u, err := classlease.NewReporter(classlease.ReporterConfig{
		Slices: mgr.GetClient(), Leases: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(classlease.ReporterName),
		Synced: mgr.GetCache().WaitForCacheSync, ClassOf: scope{status: views}.classOf, Replicated: replicatedSelector(),
		Namespace: namespace, After: after, Count: count, Oldest: oldest,
	})
	if err != nil {
		return err
	}
	return mgr.Add(u)
}
