package resourceslice_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// TestBudgetRefusedWhereControllersSkipLeaderElection: a manager whose
// controllers run on every replica (Controller.NeedLeaderElection false)
// cannot serve a budgeted class: AddToManager and ClassSet.Serve say why,
// at once, rather than leave the non-leaders' workers waiting for a budget
// feed that runs on the leader only (and their managers unable to stop). The
// budget is left free for another class, and a class without a budget is
// still served.
func TestBudgetRefusedWhereControllersSkipLeaderElection(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, sdkscheme.Add(scheme))
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "books",
		LeaderElectionNamespace: "default",
		Controller:              config.Controller{SkipNameValidation: ptr.To(true), NeedLeaderElection: ptr.To(false)},
	})
	require.NoError(t, err)
	b, err := budget.New("pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	require.NoError(t, err)

	err = resourceslice.AddToManager(mgr, "gold", grant, resourceslice.WithBudget(b))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NeedLeaderElection")
	assert.Contains(t, err.Error(), `class "gold"`)
	used := b.Used()
	assert.Zero(t, used.Cpu().MilliValue())

	cs, err := resourceslice.NewClassSet(mgr)
	require.NoError(t, err)
	err = cs.Serve("silver", grant, resourceslice.WithBudget(b))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NeedLeaderElection")

	// Nothing was claimed: the class can be served without a budget.
	err = resourceslice.AddToManager(mgr, "gold", grant)
	require.NoError(t, err)
	assert.False(t, errors.Is(err, resourceslice.ErrClassRegistered))
}
