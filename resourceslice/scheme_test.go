package resourceslice_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// managerWithScheme is a manager whose API server does not exist, on the
// scheme a test builds.
func managerWithScheme(t *testing.T, adds ...func(*runtime.Scheme) error) manager.Manager {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range adds {
		require.NoError(t, add(scheme))
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Scheme:                 scheme,
		MapperProvider:         func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	return mgr
}

// knownTypes is what a scheme holds, to tell that nothing wrote it.
func knownTypes(s *runtime.Scheme) map[schema.GroupVersionKind]bool {
	out := map[schema.GroupVersionKind]bool{}
	for gvk := range s.AllKnownTypes() {
		out[gvk] = true
	}
	return out
}

// The scheme is the user's (issue 43): every registration checks it, names
// what is missing and the call that adds it, and never writes it.
func TestARegistrationRefusesAnIncompleteScheme(t *testing.T) {
	reg := func() resourceslice.Option { return resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()) }
	coreOnly := clientgoscheme.AddToScheme
	slicesOnly := authv1beta1.AddToScheme
	cases := map[string]struct {
		reason   string
		scheme   []func(*runtime.Scheme) error
		register func(manager.Manager) error
		want     []string
	}{
		"NewClassSet": {
			reason: "a set serves ResourceSlices",
			scheme: []func(*runtime.Scheme) error{coreOnly},
			register: func(mgr manager.Manager) error {
				_, err := resourceslice.NewClassSet(mgr, reg())
				return err
			},
			want: []string{"authentication.liqo.io/v1beta1 ResourceSlice", "call authv1beta1.AddToScheme(scheme)"},
		},
		"AddToManager": {
			reason:   "a class reads ResourceSlices and Tenants",
			scheme:   []func(*runtime.Scheme) error{coreOnly},
			register: func(mgr manager.Manager) error { return resourceslice.AddToManager(mgr, "gold", grant, reg()) },
			want:     []string{`class "gold"`, "authentication.liqo.io/v1beta1 ResourceSlice, authentication.liqo.io/v1beta1 Tenant", "call authv1beta1.AddToScheme(scheme)"},
		},
		"ServeWithABudget": {
			reason: "a budget counts Liqo's Quotas",
			scheme: []func(*runtime.Scheme) error{coreOnly, slicesOnly},
			register: func(mgr manager.Manager) error {
				cs, err := resourceslice.NewClassSet(mgr, reg())
				if err != nil {
					return err
				}
				b, err := budget.New("b", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
				if err != nil {
					return err
				}
				return cs.Serve("gold", grant, resourceslice.WithBudget(b))
			},
			want: []string{`class "gold"`, "offloading.liqo.io/v1beta1 Quota", "call offloadingv1beta1.AddToScheme(scheme)"},
		},
		"ServeWithALease": {
			reason: "a class Lease is a coordination/v1 Lease",
			scheme: []func(*runtime.Scheme) error{slicesOnly},
			register: func(mgr manager.Manager) error {
				cs, err := resourceslice.NewClassSet(mgr, reg())
				if err != nil {
					return err
				}
				return cs.Serve("gold", grant, resourceslice.WithClassLease("liqo"), resourceslice.WithoutTenantRule())
			},
			want: []string{"coordination.k8s.io/v1 Lease", "call clientgoscheme.AddToScheme(scheme)"},
		},
		"UnservedReporter": {
			reason:   "the reporter reads slices and Leases",
			scheme:   []func(*runtime.Scheme) error{slicesOnly},
			register: func(mgr manager.Manager) error { return resourceslice.AddUnservedReporter(mgr, "liqo", time.Minute) },
			want:     []string{"unserved reporter", "coordination.k8s.io/v1 Lease", "call clientgoscheme.AddToScheme(scheme)"},
		},
		"FromObject": {
			reason:   "a budget that follows a SliceBudget reads it",
			scheme:   []func(*runtime.Scheme) error{coreOnly, slicesOnly},
			register: func(mgr manager.Manager) error { _, err := budget.FromObject(mgr, "b"); return err },
			want:     []string{`budget "b"`, "sliceclass.io/v1alpha1 SliceBudget", "call v1alpha1.AddToScheme(scheme)"},
		},
		"FromObjectWithoutCoreTypes": {
			reason:   "a SliceBudget's spec may name a node pool at any time (issue 42: no kind is registered for the type v1.Node)",
			scheme:   []func(*runtime.Scheme) error{sdkscheme.Add},
			register: func(mgr manager.Manager) error { _, err := budget.FromObject(mgr, "b"); return err },
			want:     []string{"v1 Node, v1 Pod", "call clientgoscheme.AddToScheme(scheme)"},
		},
		"NewNodePool": {
			reason: "a node pool reads Nodes",
			scheme: []func(*runtime.Scheme) error{sdkscheme.Add},
			register: func(mgr manager.Manager) error {
				_, err := budget.NewNodePool(mgr, "pool", labels.Everything())
				return err
			},
			want: []string{"v1 Node", "call clientgoscheme.AddToScheme(scheme)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mgr := managerWithScheme(t, tc.scheme...)
			before := knownTypes(mgr.GetScheme())
			err := tc.register(mgr)
			require.Error(t, err, tc.reason)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w, tc.reason)
			}
			assert.Equal(t, before, knownTypes(mgr.GetScheme()), "the scheme is left as the user built it")
		})
	}
}

// With the scheme a user's main builds (client-go's and AddToScheme), every
// registration is accepted, and the scheme is left as it was.
func TestACompleteSchemeIsEnough(t *testing.T) {
	mgr := managerWithScheme(t, clientgoscheme.AddToScheme, sdkscheme.Add)
	before := knownTypes(mgr.GetScheme())
	reg := resourceslice.WithMetricsRegisterer(prometheus.NewRegistry())
	cs, err := resourceslice.NewClassSet(mgr, reg)
	require.NoError(t, err)
	pool, err := budget.NewNodePool(mgr, "pool", labels.Everything(), budget.WithLocalPods())
	require.NoError(t, err)
	object, err := budget.FromObject(mgr, "object")
	require.NoError(t, err)
	for i, b := range []*budget.Budget{pool, object} {
		require.NoError(t, cs.Serve(fmt.Sprintf("c%d", i), grant, resourceslice.WithBudget(b), resourceslice.WithClassLease("liqo")))
	}
	require.NoError(t, resourceslice.AddToManager(mgr, "static", grant, reg))
	require.NoError(t, resourceslice.AddUnservedReporter(mgr, "liqo", time.Minute))
	assert.Equal(t, before, knownTypes(mgr.GetScheme()))
}

// A registration after start (allowed: ClassSet.Serve, AddToManager
// through mgr.Add) neither writes the scheme nor races the caches that
// read it (run with -race): with the SDK's types missing it is refused, as
// before start; with them, it serves. The manager's caches decode watch
// events with the scheme while the registrations run.
func TestARegistrationAfterStartLeavesTheSchemeAlone(t *testing.T) {
	cp := controlplane.Start(t)
	reg := func() resourceslice.Option { return resourceslice.WithMetricsRegisterer(prometheus.NewRegistry()) }
	// readScheme keeps the manager's cache decoding ConfigMaps (the
	// scheme read on every event) until the test ends.
	readScheme := func(t *testing.T, m *envkit.Manager) {
		inf, err := m.GetCache().GetInformer(context.Background(), &corev1.ConfigMap{})
		require.NoError(t, err)
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) { _, _, _ = m.GetScheme().ObjectKinds(o.(runtime.Object)) }})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		t.Cleanup(func() { cancel(); <-done })
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "scheme-reader-"}}
				if err := cp.Client.Create(ctx, cm); err == nil {
					_ = cp.Client.Delete(ctx, cm)
				}
			}
		}()
	}

	t.Run("Incomplete", func(t *testing.T) {
		scheme := runtime.NewScheme()
		require.NoError(t, clientgoscheme.AddToScheme(scheme))
		m := envkit.StartManagerWith(t, cp.Config, envkit.ManagerOptions(t, scheme), func(manager.Manager) error { return nil })
		readScheme(t, m)
		before := knownTypes(scheme)
		_, err := resourceslice.NewClassSet(m, reg())
		assert.ErrorContains(t, err, "call authv1beta1.AddToScheme(scheme)")
		err = resourceslice.AddToManager(m, "after-start", grant, reg())
		assert.ErrorContains(t, err, "call authv1beta1.AddToScheme(scheme)")
		assert.Equal(t, before, knownTypes(scheme), "a running manager's scheme is not written")
	})
	t.Run("Complete", func(t *testing.T) {
		var cs *resourceslice.ClassSet
		m := envkit.StartManager(t, cp, func(mgr manager.Manager) error {
			var err error
			cs, err = resourceslice.NewClassSet(mgr, reg())
			return err
		})
		readScheme(t, m)
		before := knownTypes(m.GetScheme())
		require.NoError(t, cs.Serve("after-start", grant))
		require.NoError(t, resourceslice.AddToManager(m, "after-start-static", grant, reg()))
		assert.Equal(t, before, knownTypes(m.GetScheme()))
	})
}
