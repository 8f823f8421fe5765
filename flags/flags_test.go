package flags_test

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// parse binds the standard flags on a set of their own and parses args.
func parse(t *testing.T, args ...string) *flags.Values {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	v := flags.Bind(fs)
	require.NoError(t, fs.Parse(args))
	return v
}

func TestDefaults(t *testing.T) {
	v := parse(t)
	assert.Equal(t, ":8080", v.MetricsBindAddress)
	assert.Equal(t, ":8081", v.HealthProbeBindAddress)
	assert.Equal(t, 1, v.MaxConcurrentReconciles)
	assert.Equal(t, resourceslice.DecisionEventsAll, v.DecisionEvents, "an event on every decision, as the SDK")
	assert.False(t, v.LeaderElect)
	assert.True(t, v.EnableWarmup, "standbys are warm unless told otherwise")
	assert.True(t, v.Zap.Development)
	assert.Len(t, v.ClassDefaults(), 2, "workers and decision events; no class Lease")
}

// TestWarmup checks which standbys warm up: with leader election, all of
// them unless --enable-warmup=false; without it, the option is left to
// controller-runtime (it has no standby to warm). With leader election the
// leader releases its lease when it stops, whatever the warm-up.
func TestWarmup(t *testing.T) {
	for _, tc := range []struct {
		reason string
		args   []string
		want   *bool
	}{
		{"leader election: a warm standby by default", []string{"--leader-elect"}, ptr.To(true)},
		{"leader election, warm-up turned off: a cold standby", []string{"--leader-elect", "--enable-warmup=false"}, ptr.To(false)},
		{"leader election, warm-up given explicitly", []string{"--leader-elect", "--enable-warmup"}, ptr.To(true)},
		{"no leader election: left unset", nil, nil},
		{"no leader election, warm-up given: still unset", []string{"--enable-warmup=true"}, nil},
	} {
		opts := parse(t, tc.args...).ManagerOptions(runtime.NewScheme())
		assert.Equal(t, tc.want, opts.Controller.EnableWarmup, tc.reason)
		assert.Equal(t, opts.LeaderElection, opts.LeaderElectionReleaseOnCancel,
			"%s: a leader steps down when it stops, so that a standby need not wait for the lease to expire", tc.reason)
	}
}

// Every flag the chart renders for any manager reaches its field.
func TestEveryFlag(t *testing.T) {
	v := parse(t, "--class-name=gold,silver", "--class-name", "bronze",
		"--class-lease-namespace=leases", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091",
		"--leader-elect", "--leader-election-namespace=liqo", "--leader-election-id=mine", "--enable-warmup=false",
		"--max-concurrent-reconciles=8", "--decision-events=denied", "--kubeconfig=/k",
		"--zap-devel=false", "--zap-log-level=debug")
	assert.Equal(t, flags.ClassList{"gold", "silver", "bronze"}, v.ClassNames)
	assert.Equal(t, "leases", v.ClassLeaseNamespace)
	assert.Equal(t, 8, v.MaxConcurrentReconciles)
	assert.Equal(t, resourceslice.DecisionEventsDenied, v.DecisionEvents)
	assert.Equal(t, "/k", v.Kubeconfig)
	assert.False(t, v.Zap.Development)
	assert.NotNil(t, v.Zap.Level)
	assert.Len(t, v.ClassDefaults(), 3, "a class Lease too")

	opts := v.ManagerOptions(runtime.NewScheme())
	assert.Equal(t, ":9090", opts.Metrics.BindAddress)
	assert.Equal(t, ":9091", opts.HealthProbeBindAddress)
	assert.True(t, opts.LeaderElection)
	assert.Equal(t, "liqo", opts.LeaderElectionNamespace)
	assert.Equal(t, "mine", opts.LeaderElectionID)
	assert.Equal(t, ptr.To(false), opts.Controller.EnableWarmup)
	assert.NotNil(t, opts.Scheme)
}

func TestBadFlags(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags.Bind(fs)
	err := fs.Parse([]string{"--decision-events=some"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want all, denied or none")
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		reason string
		args   []string
		want   string // "" for valid
	}{
		{"a class to serve is needed", nil, "at least one --class-name, or --classes-file"},
		{"one source of classes", []string{"--class-name=gold", "--classes-file=/c"}, "exclusive"},
		{"Liqo's own class is refused", []string{"--class-name=default"}, "default"},
		{"a class given twice", []string{"--class-name=gold,gold"}, `class "gold" given twice`},
		{"no workers", []string{"--class-name=gold", "--max-concurrent-reconciles=0"}, "at least 1, got 0"},
		{"classes by name", []string{"--class-name=gold,silver"}, ""},
		{"classes from a file", []string{"--classes-file=/c"}, ""},
	} {
		err := parse(t, tc.args...).Validate()
		if tc.want == "" {
			assert.NoError(t, err, tc.reason)
			continue
		}
		if assert.Error(t, err, tc.reason) {
			assert.Contains(t, err.Error(), tc.want, tc.reason)
		}
	}
}

func TestLeaderElectionName(t *testing.T) {
	a := parse(t, "--class-name=silver,gold").LeaderElectionName()
	b := parse(t, "--class-name=gold", "--class-name=silver").LeaderElectionName()
	assert.Equal(t, a, b, "the lease must not depend on the flags' order")
	assert.Equal(t, "sliceclass-gold-silver", a)
	long := parse(t, "--class-name="+strings.Repeat("x", 60)+","+strings.Repeat("y", 60)).LeaderElectionName()
	odd := parse(t, "--class-name=gold_1.a").LeaderElectionName()
	for _, n := range []string{a, long, odd} {
		assert.Empty(t, validation.IsDNS1123Label(n), "lease name %q is not a valid DNS label", n)
	}
	assert.NotEqual(t, parse(t, "--class-name=gold").LeaderElectionName(), parse(t, "--class-name=silver").LeaderElectionName(),
		"different class sets must get different leases")
	assert.Equal(t, "sliceclass-classes-file", parse(t, "--classes-file=/c").LeaderElectionName(),
		"the file's classes change while the lease is held")
	assert.Equal(t, "mine", parse(t, "--classes-file=/c", "--leader-election-id=mine").LeaderElectionName())
}

// withoutKubeconfig leaves the process with no way to find an API server:
// no KUBECONFIG, an empty HOME, and not in a cluster.
func withoutKubeconfig(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	return home
}

func TestRESTConfigNotFound(t *testing.T) {
	home := withoutKubeconfig(t)
	missing := filepath.Join(t.TempDir(), "nope")

	_, err := flags.Values{}.RESTConfig()
	require.Error(t, err)
	for _, want := range []string{"no kubeconfig found", "--kubeconfig", "KUBECONFIG", "not running in a cluster", filepath.Join(home, ".kube", "config")} {
		assert.Contains(t, err.Error(), want)
	}

	t.Setenv("KUBECONFIG", missing)
	_, err = flags.Values{}.RESTConfig()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KUBECONFIG="+missing)

	_, err = flags.Values{Kubeconfig: missing}.RESTConfig()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--kubeconfig "+missing)
	assert.True(t, errors.Is(err, os.ErrNotExist), "got %v", err)

}

// ClassConfigs checks the flags before it reads anything: no class flag
// is an error, not a manager serving nothing.
func TestClassConfigsValidatesFirst(t *testing.T) {
	_, err := flags.Values{MaxConcurrentReconciles: 1}.ClassConfigs(nil)
	assert.ErrorContains(t, err, "--class-name")
	_, err = flags.Values{ClassNames: flags.ClassList{"gold"}}.ClassConfigs(nil)
	assert.ErrorContains(t, err, "--max-concurrent-reconciles")
	classes, err := flags.Values{ClassNames: flags.ClassList{"gold"}, MaxConcurrentReconciles: 1}.ClassConfigs(nil)
	require.NoError(t, err)
	require.Len(t, classes, 1)
	assert.Equal(t, "gold", classes[0].Name)
}

func TestRESTConfigReadsHomeKubeconfig(t *testing.T) {
	home := withoutKubeconfig(t)
	dir := filepath.Join(home, ".kube")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://example.invalid:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), []byte(kubeconfig), 0o600))
	cfg, err := flags.Values{}.RESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://example.invalid:6443", cfg.Host)
	assert.Equal(t, float32(-1), cfg.QPS, "client-side rate limiting is off, as with controller-runtime's GetConfig")
}

// A main that binds on flag.CommandLine meets controller-runtime's own
// --kubeconfig there: Bind shares it instead of panicking, and RESTConfig
// reads it.
func TestBindBesideControllerRuntimesKubeconfig(t *testing.T) {
	withoutKubeconfig(t)
	fs := flag.NewFlagSet("main", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	theirs := fs.String("kubeconfig", "", "controller-runtime's")
	v := flags.Bind(fs)
	missing := filepath.Join(t.TempDir(), "nope")
	require.NoError(t, fs.Parse([]string{"--kubeconfig=" + missing, "--class-name=gold"}))
	assert.Equal(t, missing, *theirs)
	_, err := v.RESTConfig()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--kubeconfig "+missing, "the shared flag is read")
}
