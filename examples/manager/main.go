// Command manager is a runnable class controller: it serves one or more
// ResourceSlice classes with the capped-resources policy.
//
//	manager --class-name gold --class-name silver --cap cpu=4,memory=8Gi,pods=110 --leader-elect
//
// Bad flags print one line and exit with code 2.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/resourceslice"
)

type options struct {
	classes          []string
	caps             corev1.ResourceList
	metricsAddr      string
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	workers          int
	kubeconfig       string
}

// classList is a repeatable, comma-separated --class-name flag.
type classList []string

func (c *classList) String() string { return strings.Join(*c, ",") }

func (c *classList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*c = append(*c, s)
		}
	}
	return nil
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	var classes classList
	var caps string
	fs.Var(&classes, "class-name", "ResourceSlice class to serve (repeatable, or comma separated)")
	fs.StringVar(&caps, "cap", "", "caps of the capped policy, e.g. cpu=4,memory=8Gi,pods=110")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "metrics endpoint address; 0 disables it")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "health probe address; 0 disables it")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "enable leader election")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's)")
	fs.IntVar(&o.workers, "max-concurrent-reconciles", resourceslice.DefaultMaxConcurrentReconciles, "slices decided in parallel per class")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: KUBECONFIG, in-cluster, ~/.kube/config)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if len(classes) == 0 {
		return o, errors.New("at least one --class-name is required")
	}
	seen := map[string]bool{}
	for _, c := range classes {
		if err := resourceslice.ValidateClass(c); err != nil {
			return o, err
		}
		if seen[c] {
			return o, fmt.Errorf("class %q given twice", c)
		}
		seen[c] = true
	}
	o.classes = classes
	parsed, err := cappedresources.ParseCaps(caps)
	if err != nil {
		return o, fmt.Errorf("--cap: %w", err)
	}
	o.caps = parsed
	if o.workers < 1 {
		return o, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.workers)
	}
	return o, nil
}

// leaseName derives the leader-election lease from the served classes, so
// managers serving different class sets do not contend for one lease.
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

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

// run serves the classes until ctx ends.
func run(ctx context.Context, o options, cfg *rest.Config) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        leaseName(o.classes),
		LeaderElectionNamespace: o.leaderElectionNS,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	policy, err := cappedresources.New(o.caps)
	if err != nil {
		return err
	}
	for _, class := range o.classes {
		if err := resourceslice.AddToManager(mgr, class, policy, resourceslice.WithMaxConcurrentReconciles(o.workers)); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("cache-synced", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("cache not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	ctrl.Log.Info("serving classes", "classes", o.classes, "caps", o.caps)
	return mgr.Start(ctx)
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New())
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: loading kubeconfig:", err)
		os.Exit(1)
	}
	if err := run(ctrl.SetupSignalHandler(), o, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
