package controlplane_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// fakeAssets creates dir holding empty kube-apiserver and etcd files, which
// is all AssetsDir checks.
func fakeAssets(t *testing.T, dir string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, b := range []string{"kube-apiserver", "etcd"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, b), nil, 0o755))
	}
	return dir
}

func TestAssetsDirSearchOrder(t *testing.T) {
	cases := map[string]struct {
		reason string
		// setup creates binaries under tmp and returns KUBEBUILDER_ASSETS
		// and the directory AssetsDir must return ("" for ErrNoAssets).
		setup func(t *testing.T, tmp string) (kubebuilderAssets, want string)
	}{
		"KubebuilderAssetsFirst": {
			reason: "an explicit KUBEBUILDER_ASSETS wins over every cache",
			setup: func(t *testing.T, tmp string) (string, string) {
				fakeAssets(t, filepath.Join(tmp, "work", "bin", "envtest", "k8s-v1.35.3-etcd-v3.6.8"))
				fakeAssets(t, filepath.Join(tmp, "cache", "k8s-v1.35.3-etcd-v3.6.8"))
				d := fakeAssets(t, filepath.Join(tmp, "assets"))
				return d, d
			},
		},
		"KubebuilderAssetsWithoutBinaries": {
			reason: "a KUBEBUILDER_ASSETS lacking the binaries is an error, not a reason to look elsewhere",
			setup: func(t *testing.T, tmp string) (string, string) {
				fakeAssets(t, filepath.Join(tmp, "cache", "k8s-v1.35.3-etcd-v3.6.8"))
				return filepath.Join(tmp, "empty"), ""
			},
		},
		"EnclosingRepoBeforeUserCache": {
			reason: "bin/envtest of an enclosing directory (make envtest) comes before the user cache",
			setup: func(t *testing.T, tmp string) (string, string) {
				d := fakeAssets(t, filepath.Join(tmp, "work", "bin", "envtest", "k8s-v1.35.3-etcd-v3.6.8"))
				fakeAssets(t, filepath.Join(tmp, "cache", "k8s-v1.35.3-etcd-v3.6.8"))
				return "", d
			},
		},
		"UserCacheLast": {
			reason: "a user's module has no bin/envtest: install-envtest's cache is found",
			setup: func(t *testing.T, tmp string) (string, string) {
				return "", fakeAssets(t, filepath.Join(tmp, "cache", "k8s-v1.35.3-etcd-v3.6.8"))
			},
		},
		"IncompleteUserCache": {
			reason: "a directory with only one binary (an interrupted build) is not used",
			setup: func(t *testing.T, tmp string) (string, string) {
				d := filepath.Join(tmp, "cache", "k8s-v1.35.3-etcd-v3.6.8")
				require.NoError(t, os.MkdirAll(d, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(d, "etcd"), nil, 0o755))
				return "", ""
			},
		},
		"Nothing": {
			reason: "no binaries anywhere is ErrNoAssets",
			setup: func(*testing.T, string) (string, string) {
				return "", ""
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			kubebuilderAssets, want := tc.setup(t, tmp)
			work := filepath.Join(tmp, "work", "module", "pkg")
			require.NoError(t, os.MkdirAll(work, 0o755))
			t.Chdir(work)
			t.Setenv("KUBEBUILDER_ASSETS", kubebuilderAssets)
			t.Setenv(controlplane.AssetsDirEnv, filepath.Join(tmp, "cache"))

			got, err := controlplane.AssetsDir()
			if want == "" {
				assert.ErrorIs(t, err, controlplane.ErrNoAssets, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, want, got, tc.reason)
		})
	}
}

func TestErrNoAssetsNamesInstallCommand(t *testing.T) {
	const cmd = "go run github.com/sliceclass/sliceclass/testing/controlplane/install-envtest"
	assert.Contains(t, controlplane.ErrNoAssets.Error(), cmd)

	// The command named is this package's install-envtest directory.
	src, err := os.ReadFile(filepath.Join("install-envtest", "main.go"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(src), "package main\n"), "install-envtest is a command")
}
