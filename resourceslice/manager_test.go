package resourceslice_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
)

var grant = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	conditions.Accept(rs, "Granted", "")
	return ctrl.Result{}, nil
})

// unreachableManager is a manager whose API server does not exist.
func unreachableManager(t *testing.T) manager.Manager {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, sdkscheme.Add(scheme))
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	return mgr
}

// nameCheckedManager is unreachableManager with controller-runtime's
// controller-name check on, its default. The check is process-wide and
// remembers every name: a test that relies on it serves classes named by
// uniqueClass.
func nameCheckedManager(t *testing.T) manager.Manager {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, sdkscheme.Add(scheme))
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	return mgr
}

// classSeq numbers uniqueClass's classes.
var classSeq atomic.Int64

// uniqueClass is a class no other registration of the process named.
func uniqueClass(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, classSeq.Add(1))
}

// Registration makes no API call (issue 11): wiring is unit-testable and the
// duplicate-class rule holds with no API server at all. Two AddToManager
// calls are two sets of one class (issue 43): controller-runtime's
// controller-name check refuses the second.
func TestAddToManagerNeedsNoAPIServer(t *testing.T) {
	mgr := nameCheckedManager(t)
	gold := uniqueClass("gold")
	b, err := budget.New("shared", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")})
	require.NoError(t, err)

	require.NoError(t, resourceslice.AddToManager(mgr, gold, grant, resourceslice.WithBudget(b)))
	require.NoError(t, resourceslice.AddToManager(mgr, uniqueClass("silver"), grant, resourceslice.WithBudget(b)), "two classes may share a budget")

	err = resourceslice.AddToManager(mgr, gold, grant)
	require.Error(t, err)
	assert.ErrorContains(t, err, "already exists", "controller-runtime's controller-name check")
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", gold))

	// Another manager may serve the same class (a restart, a second replica).
	assert.NoError(t, resourceslice.AddToManager(unreachableManager(t), "gold", grant))
}

func TestAddToManagerRejectsBadSetup(t *testing.T) {
	mgr := unreachableManager(t)
	cases := map[string]struct {
		class string
		h     handler.Handler
		opts  []resourceslice.Option
		want  string
	}{
		"reserved class":      {class: "default", h: grant, want: "reserved"},
		"nil handler":         {class: "a", want: "nil handler"},
		"nil budget":          {class: "b", h: grant, opts: []resourceslice.Option{resourceslice.WithBudget(nil)}, want: "nil budget"},
		"bad events mode":     {class: "c", h: grant, opts: []resourceslice.Option{resourceslice.WithDecisionEvents(42)}, want: "decision events"},
		"negative workers":    {class: "d", h: grant, opts: []resourceslice.Option{resourceslice.WithMaxConcurrentReconciles(0)}, want: "at least 1"},
		"backoff base > max":  {class: "e", h: grant, opts: []resourceslice.Option{resourceslice.WithRetryBackoff(time.Minute, time.Second)}, want: "backoff"},
		"nil option":          {class: "f", h: grant, opts: []resourceslice.Option{nil}, want: "nil Option"},
		"nil decision option": {class: "g", h: grant, opts: []resourceslice.Option{resourceslice.DecisionOption(nil)}, want: "nil Option"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := resourceslice.AddToManager(mgr, tc.class, tc.h, tc.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// A failed registration does not claim the class.
	assert.NoError(t, resourceslice.AddToManager(mgr, "b", grant))
}

// A manager whose scheme holds only Liqo's types (as a least-cache manager
// builds it) serves classes without Leases; one that writes or lists class
// Leases (WithClassLease, a set's default, the unserved reporter) is
// refused with the call to add, and the scheme is not written (issue 43:
// the scheme is the user's).
func TestLeaseTypesNeededWhenLeasesAreUsed(t *testing.T) {
	lease := coordinationv1.SchemeGroupVersion.WithKind("Lease")
	liqoOnly := func() manager.Manager { return managerWithScheme(t, authv1beta1.AddToScheme) }

	mgr := liqoOnly()
	require.NoError(t, resourceslice.AddToManager(mgr, "gold", grant, resourceslice.WithoutTenantRule()), "no Lease type needed without WithClassLease")
	err := resourceslice.AddToManager(mgr, "silver", grant, resourceslice.WithoutTenantRule(), resourceslice.WithClassLease("liqo"))
	assert.ErrorContains(t, err, "coordination.k8s.io/v1 Lease: call clientgoscheme.AddToScheme(scheme)", "WithClassLease writes Leases through the manager's client")
	assert.False(t, mgr.GetScheme().Recognizes(lease), "the scheme is not written")

	_, err = resourceslice.NewClassSet(liqoOnly(), resourceslice.WithClassLease("liqo"))
	assert.ErrorContains(t, err, "coordination.k8s.io/v1 Lease", "a ClassSet's class Leases too")

	err = resourceslice.AddUnservedReporter(liqoOnly(), "liqo", time.Minute)
	assert.ErrorContains(t, err, "coordination.k8s.io/v1 Lease", "the unserved reporter lists Leases")
}
