package flags

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// RESTConfig finds the API server as controller-runtime's GetConfig does
// (--kubeconfig, then KUBECONFIG, then the in-cluster config, then
// ~/.kube/config) but logs nothing and reads no global flag: when there is
// no configuration at all it returns one error line saying where it looked
// and what to set. Without a QPS of its own the config has no client-side
// rate limit, as with GetConfig: the API server's priority and fairness
// protects it.
func (v Values) RESTConfig() (*rest.Config, error) {
	cfg, err := loadConfig(v.kubeconfig())
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

// loadConfig is RESTConfig without the QPS default.
func loadConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	var paths []string
	if env != "" {
		paths = filepath.SplitList(env)
	} else {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return cfg, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("loading the in-cluster config: %w", err)
		}
		paths = []string{filepath.Join(homeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: paths}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", strings.Join(paths, string(filepath.ListSeparator)), err)
	}
	if clientcmdapi.IsConfigEmpty(raw) {
		where := "in " + strings.Join(paths, ", ")
		if env != "" {
			where = "in KUBECONFIG=" + env
		} else {
			where += ", and not running in a cluster"
		}
		return nil, fmt.Errorf("no kubeconfig found (%s): pass --kubeconfig PATH or set KUBECONFIG", where)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", strings.Join(paths, string(filepath.ListSeparator)), err)
	}
	return cfg, nil
}

// homeDir is $HOME, or the user's home directory when HOME is unset.
func homeDir() string {
	if h := os.Getenv("HOME"); h != "" {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}
