package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// crdFile is the CRD the tests install, as committed (make crds writes it).
var crdFile = filepath.Join("..", "..", "config", "crd", "sliceclass.io_slicebudgets.yaml")

// cp is the package's control plane; installed installs the SliceBudget CRD
// on it once, for the tests that need it.
var (
	cp        *controlplane.ControlPlane
	installed = sync.OnceValue(func() error {
		_, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{Paths: []string{crdFile}, ErrorIfPathMissing: true})
		return err
	})
)

func TestMain(m *testing.M) { os.Exit(controlplane.RunSuite(m, &cp)) }

// server returns a client, with SliceBudget in its scheme, of a control
// plane that serves the committed CRD. It skips the test when no control
// plane runs (-short, no envtest binaries).
func server(t *testing.T) client.Client {
	t.Helper()
	cp.Require(t)
	require.NoError(t, installed(), "installing %s", crdFile)
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	c, err := client.New(cp.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

// cleanup deletes obj when the test ends, so that names can be reused.
func cleanup(t *testing.T, c client.Client, obj client.Object) {
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), obj)
	})
}
