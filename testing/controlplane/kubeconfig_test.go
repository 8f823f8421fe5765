package controlplane_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// A kubeconfig written from a config loads back as that config, readable by
// its owner only. (dev-controlplane's test and the privilege suite reach a
// real API server through one.)
func TestWriteKubeconfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{
		CAData: []byte("ca"), CertData: []byte("crt"), KeyData: []byte("key"),
	}}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(cfg, path))

	got, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	assert.Equal(t, cfg.Host, got.Host)
	assert.Equal(t, cfg.CAData, got.CAData)
	assert.Equal(t, cfg.CertData, got.CertData)
	assert.Equal(t, cfg.KeyData, got.KeyData)
	raw, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	assert.Equal(t, controlplane.KubeconfigContext, raw.CurrentContext)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "it holds a private key")
}
