package controlplane

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigContext names the cluster, user and context of a kubeconfig
// that WriteKubeconfig writes.
const KubeconfigContext = "sliceclass-controlplane"

// WriteKubeconfig writes cfg as a kubeconfig file at path (mode 0600: it
// holds a private key), so that a program run as a subprocess, or by hand,
// reaches the API server as cfg does: with the control plane's Config as its
// administrator, with AddUser's as that user. The file names the API server
// and its CA, and the client certificate and key of cfg; its one context,
// the current one, is "sliceclass-controlplane".
//
//	cfg, err := cp.AddUser("system:serviceaccount:liqo:manager", "system:serviceaccounts")
//	...
//	err = controlplane.WriteKubeconfig(cfg, filepath.Join(t.TempDir(), "kubeconfig"))
//	// run the manager with --kubeconfig, or KUBECONFIG set, to that path
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[KubeconfigContext] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[KubeconfigContext] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[KubeconfigContext] = &clientcmdapi.Context{Cluster: KubeconfigContext, AuthInfo: KubeconfigContext}
	kc.CurrentContext = KubeconfigContext
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
