package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/manager/flags"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--class-name", "gold", "--class-name=silver,bronze", "--cap", "cpu=4,memory=8Gi", "--max-concurrent-reconciles", "3"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, flags.ClassList{"gold", "silver", "bronze"}, o.ClassNames)
	assert.Equal(t, 3, o.MaxConcurrentReconciles)
	assert.Equal(t, int64(4), o.caps.Cpu().Value())
	assert.Equal(t, ":8080", o.MetricsBindAddress)
	assert.Equal(t, ":8081", o.HealthProbeBindAddress)
	assert.True(t, o.Zap.Development, "logs default to development mode, as kubebuilder scaffolds")
	assert.Nil(t, o.budget, "no budget unless --budget")

	o, err = parseFlags([]string{"--class-name", "gold,silver", "--cap", "cpu=4", "--budget", "cpu=64,memory=256Gi"}, io.Discard)
	require.NoError(t, err)
	require.NotNil(t, o.budget, "--budget builds one budget shared by the classes")
	total := o.budget.Total()
	assert.Equal(t, int64(64), total.Cpu().Value())
	assert.Equal(t, "256Gi", total.Memory().String())

	bad := map[string][]string{
		"no class":       {},
		"no cap":         {"--class-name", "gold"},
		"reserved class": {"--class-name", "default"},
		"bad class":      {"--class-name", "a b"},
		"duplicate":      {"--class-name", "gold,gold"},
		"bad cap":        {"--class-name", "gold", "--cap", "cpu"},
		"bad budget":     {"--class-name", "gold", "--cap", "cpu=4", "--budget", "cpu=-1"},
		"zero workers":   {"--class-name", "gold", "--cap", "cpu=4", "--max-concurrent-reconciles", "0"},
		"unknown flag":   {"--class-name", "gold", "--nope"},
		"stray argument": {"--class-name", "gold", "extra"},
		"bad log level":  {"--class-name", "gold", "--zap-log-level", "loud"},
	}
	for name, args := range bad {
		t.Run(name, func(t *testing.T) {
			var help bytes.Buffer
			_, err := parseFlags(args, &help)
			require.Error(t, err, "args %v", args)
			assert.NotContains(t, err.Error(), "\n", "the error must be one line")
			assert.Empty(t, help.String(), "a bad flag must not print the usage")
		})
	}
}

func TestParseFlagsLogging(t *testing.T) {
	o, err := parseFlags([]string{"--class-name", "gold", "--cap", "cpu=4", "--zap-devel=false", "--zap-log-level", "error", "--zap-encoder", "json"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, o.Zap.Development)
	require.NotNil(t, o.Zap.Level, "--zap-log-level must set the level")
	assert.False(t, o.Zap.Level.Enabled(zapcore.WarnLevel))
	assert.True(t, o.Zap.Level.Enabled(zapcore.ErrorLevel))
}

func TestHelpListsEveryFlagAndExitsZero(t *testing.T) {
	var all []string
	newFlagSet(&options{}).VisitAll(func(f *flag.Flag) { all = append(all, f.Name) })
	require.Contains(t, all, "zap-log-level", "the zap logging flags must be bound")

	for _, arg := range []string{"-h", "--help", "-help"} {
		t.Run(arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), []string{arg}, &stdout, &stderr)
			assert.Equal(t, 0, code)
			assert.Empty(t, stderr.String())
			assert.Contains(t, stdout.String(), "Usage: manager")
			for _, name := range all {
				assert.Regexp(t, `(?m)^  -`+regexp.QuoteMeta(name)+`( |$)`, stdout.String(), "help must list --%s", name)
			}
		})
	}
}

func TestBadFlagExitsTwoWithOneLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"--nope"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout.String())
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line, got %q", stderr.String())
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

func TestNoKubeconfigPrintsOneLine(t *testing.T) {
	home := withoutKubeconfig(t)
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"--class-name", "gold", "--cap", "cpu=4"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout.String())
	out := stderr.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), "one line, got %q", out)
	assert.True(t, strings.HasPrefix(out, "error: no kubeconfig found"), "got %q", out)
	for _, want := range []string{"--kubeconfig", "KUBECONFIG", "not running in a cluster", filepath.Join(home, ".kube", "config")} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "KUBERNETES_MASTER")
}

func TestManagerOptionsCacheOnlyWhatIsRead(t *testing.T) {
	o, err := parseFlags([]string{"--class-name", "gold", "--cap", "cpu=4"}, io.Discard)
	require.NoError(t, err)
	opts, err := managerOptions(o)
	require.NoError(t, err)

	assert.True(t, opts.Cache.ReaderFailOnMissingInformer, "a read of an unwatched type must fail, not start an informer")
	assert.Nil(t, opts.Client.Cache, "the client reads through the cache, with controller-runtime's defaults (no unstructured caching)")
	assert.Empty(t, opts.Cache.ByObject, "trimming needs no per-type entry, hence no scheme entry")
	require.NotNil(t, opts.Cache.DefaultTransform, "ResourceSlices must be trimmed")
	rs := slicetest.NewSlice("s", slicetest.WithClass("gold"))
	rs.Spec.CSR = []byte("csr")
	rs.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "liqo"}}
	out, err := opts.Cache.DefaultTransform(rs)
	require.NoError(t, err)
	trimmed := out.(*authv1beta1.ResourceSlice)
	assert.Nil(t, trimmed.Spec.CSR)
	assert.Nil(t, trimmed.ManagedFields)

	require.NotNil(t, opts.Cache.DefaultTransform, "Tenants must be cached without managed fields")
	tenant := slicetest.NewTenant("consumer", authv1beta1.TenantConditionActive)
	tenant.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "liqo"}}
	out, err = opts.Cache.DefaultTransform(tenant)
	require.NoError(t, err)
	assert.Nil(t, out.(*authv1beta1.Tenant).ManagedFields)
}

func TestRunDecidesOnARealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, cp.CreateNamespace(ctx, slicetest.DefaultNamespace))
	o, err := parseFlags([]string{"--class-name", "gold", "--cap", "cpu=4", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	ended := serve(t, o, cp.Config)

	s := slicetest.NewSlice("big", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "16"))
	status := s.Status
	require.NoError(t, cp.Client.Create(ctx, s))
	s.Status = status
	require.NoError(t, cp.Client.Status().Update(ctx, s))

	var got authv1beta1.ResourceSlice
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		if ended, err := ended(); ended {
			return false, fmt.Errorf("run returned before deciding: %w", err)
		}
		if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, &got); err != nil {
			return false, err
		}
		return conditions.IsDecided(&got), nil
	})
	require.NoError(t, err, "waiting for a decision (conditions %+v)", got.Status.Conditions)
	assert.True(t, conditions.IsAccepted(&got), "want Accepted, got %+v", got.Status.Conditions)
	assert.Equal(t, int64(4), got.Status.Resources.Cpu().Value(), "cpu capped at 4")
}

func TestManagerCachesOnlyWhatTheSDKReads(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Not "gold": controller names are unique per process, and
	// TestRunDecidesOnARealAPIServer serves gold.
	o, err := parseFlags([]string{"--class-name", "silver", "--cap", "cpu=4", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--leader-elect", "--leader-election-namespace", "default"}, io.Discard)
	require.NoError(t, err)
	mgr, err := newManager(o, cp.Config)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-mgr.Elected():
	case <-time.After(envkit.WaitTimeout):
		require.Fail(t, "not elected leader")
	}

	// The controllers start once elected and only then open their
	// informers: wait until every watched type can be read.
	c := mgr.GetClient()
	namespaces := &metav1.PartialObjectMetadataList{}
	namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		return c.List(ctx, &authv1beta1.ResourceSliceList{}) == nil && c.List(ctx, &authv1beta1.TenantList{}) == nil &&
			c.List(ctx, namespaces) == nil, nil
	})
	require.NoError(t, err, "waiting for the ResourceSlice, Tenant and namespace metadata informers")
	var notCached *cache.ErrResourceNotCached
	err = c.List(ctx, &authv1beta1.IdentityList{})
	assert.True(t, errors.As(err, &notCached), "reading an unwatched type must not start an informer, got %v", err)
	err = c.Get(ctx, client.ObjectKey{Namespace: "x", Name: "y"}, &authv1beta1.Renew{})
	assert.True(t, errors.As(err, &notCached), "reading an unwatched type must not start an informer, got %v", err)

	// The scheme holds only Liqo's types, yet leader election still records
	// its event about the Lease.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		var events corev1.EventList
		if err := cp.Client.List(ctx, &events, client.InNamespace("default")); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == o.LeaderElectionName() {
				return true, nil
			}
		}
		return false, nil
	})
	assert.NoError(t, err, "waiting for the leader election event")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(envkit.WaitTimeout):
		t.Error("manager did not stop")
	}
}

// --grant-records-namespace gives each accepted slice of a --class-name
// class its grant record (a ConfigMap in that namespace) and a
// PriorityClass, applied by the SDK as owned objects.
func TestGrantRecordsFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx := context.Background()
	require.NoError(t, cp.CreateNamespace(ctx, slicetest.DefaultNamespace))
	require.NoError(t, cp.CreateNamespace(ctx, "records"))
	// Not "gold" nor "silver": controller names are unique per process.
	o, err := parseFlags([]string{"--class-name", "bronze", "--cap", "cpu=4", "--grant-records-namespace", "records",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, io.Discard)
	require.NoError(t, err)
	ended := serve(t, o, cp.Config)

	s := slicetest.NewSlice("recorded", slicetest.WithClass("bronze"), slicetest.WithRequest("cpu", "2"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, s))
	name := "bronze." + s.Namespace + ".recorded"
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		if ended, err := ended(); ended {
			return false, fmt.Errorf("run returned: %w", err)
		}
		var cm corev1.ConfigMap
		if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: "records", Name: name}, &cm); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		var pc schedulingv1.PriorityClass
		return cp.Client.Get(ctx, types.NamespacedName{Name: name}, &pc) == nil, nil
	})
	require.NoError(t, err, "the grant record and the PriorityClass applied")
}
