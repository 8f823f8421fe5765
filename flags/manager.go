package flags

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// classesFileLease is the leader-election lease of a manager serving
// --classes-file: its classes change while it holds the lease.
const classesFileLease = "sliceclass-classes-file"

// LeaderElectionName is --leader-election-id, or a name derived from the
// served classes: from --class-name (so that managers serving different
// class sets do not contend for one lease), or fixed with --classes-file,
// whose classes change while the lease is held.
func (v Values) LeaderElectionName() string {
	switch {
	case v.LeaderElectionID != "":
		return v.LeaderElectionID
	case v.ClassesFile != "":
		return classesFileLease
	}
	return leaseName(v.ClassNames)
}

// leaseName derives a lease name from classes: sliceclass- and the sorted
// names, or a hash of them when that is not a valid name.
func leaseName(classes []string) string {
	sorted := append([]string(nil), classes...)
	sort.Strings(sorted)
	joined := strings.ToLower(strings.Join(sorted, "-"))
	name := "sliceclass-" + strings.NewReplacer("_", "-", ".", "-").Replace(joined)
	if len(name) <= 63 && strings.Trim(name, "-") == name {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join(sorted, ",")))
	return "sliceclass-" + hex.EncodeToString(sum[:])[:16]
}

// ManagerOptions are the manager options the flags set: scheme (yours),
// the metrics and health-probe addresses, and leader election
// (LeaderElectionName in --leader-election-namespace) with, by default, warm
// standbys (--enable-warmup: Controller.EnableWarmup, which every
// controller of the manager and every class of a resourceslice.ClassSet
// follows; left unset without --leader-elect, where it changes nothing).
// With leader election the leader also releases its lease when it stops
// cleanly (LeaderElectionReleaseOnCancel; controller-runtime releases it
// only after every controller has stopped), so that on a rolling update a
// standby takes over at once instead of after the lease expires. Return
// from main once the manager's Start returns. Change the rest (the cache,
// say: resourceslice.DropUnreadSliceFields) before manager.New.
func (v Values) ManagerOptions(scheme *runtime.Scheme) manager.Options {
	opts := manager.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: v.MetricsBindAddress},
		HealthProbeBindAddress:  v.HealthProbeBindAddress,
		LeaderElection:          v.LeaderElect,
		LeaderElectionID:        v.LeaderElectionName(),
		LeaderElectionNamespace: v.LeaderElectionNamespace,
	}
	if v.LeaderElect {
		opts.Controller.EnableWarmup = ptr.To(v.EnableWarmup)
		opts.LeaderElectionReleaseOnCancel = true
	}
	return opts
}

// AddProbes adds what the chart's Deployment probes on
// --health-probe-bind-address: /healthz (alive while the process answers)
// and /readyz (ready once the manager's cache has synced).
func AddProbes(mgr manager.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding /healthz: %w", err)
	}
	err := mgr.AddReadyzCheck("cache-synced", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("cache not synced")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("adding /readyz: %w", err)
	}
	return nil
}
