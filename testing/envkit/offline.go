package envkit

import (
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// UnreachableManager is a manager whose API server does not exist, for
// unit tests: enough to build what takes a manager (a node pool,
// budget.NewNodePool) and is never started. Its RESTMapper is static,
// knowing that nodes are cluster-scoped and pods namespaced: the default
// mapper would ask the API server.
func UnreachableManager(t testing.TB) manager.Manager {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatalf("envkit: %v", err)
	}
	if err := sdkscheme.Add(scheme); err != nil { // the groups a user's main adds
		t.Fatalf("envkit: %v", err)
	}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Scheme:                 scheme,
		MapperProvider:         func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:                 testLogger(t), // not controller-runtime's global one
	})
	if err != nil {
		t.Fatalf("envkit: building a manager: %v", err)
	}
	return mgr
}

// SkipWithoutControlPlane skips a test that starts a control plane through
// a program of its own (a demo, a child process) where controlplane.Start
// would skip: under -short, or without envtest binaries. With
// SLICECLASS_REQUIRE_ENVTEST set (controlplane.RequireEnv), missing
// binaries fail the test instead.
func SkipWithoutControlPlane(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane: not under -short")
	}
	if _, err := controlplane.AssetsDir(); err != nil {
		if errors.Is(err, controlplane.ErrNoAssets) && os.Getenv(controlplane.RequireEnv) == "" {
			t.Skipf("controlplane: %v", err)
		}
		t.Fatalf("controlplane: %v", err)
	}
}
