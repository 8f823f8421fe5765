package controlplane

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sliceclass/sliceclass/config/crd"
	"github.com/sliceclass/sliceclass/internal/apiserver"
	"github.com/sliceclass/sliceclass/internal/sdkscheme"
	"github.com/sliceclass/sliceclass/internal/testwait"
)

const (
	liqoModule = "github.com/liqotech/liqo"
	crdSubdir  = "deployments/liqo/charts/liqo-crds/crds"
	// RequireEnv names the environment variable that, when non-empty, turns
	// a missing control plane into a test failure instead of a skip (CI sets it).
	RequireEnv = "SLICECLASS_REQUIRE_ENVTEST"
	// CRDDirEnv names the environment variable that overrides where the Liqo
	// CRD YAML is read from.
	CRDDirEnv = "SLICECLASS_LIQO_CRDS"
	// AssetsDirEnv names the environment variable that moves the per-user
	// cache install-envtest builds into and AssetsDir searches last
	// (default: sliceclass/envtest in os.UserCacheDir).
	AssetsDirEnv = "SLICECLASS_ENVTEST_DIR"

	// installCommand builds the binaries into the per-user cache.
	installCommand = "github.com/sliceclass/sliceclass/testing/controlplane/install-envtest"
)

// crdFiles lists the Liqo CRDs installed: the authentication group, which
// holds ResourceSlice and Tenant, offloading's Quota, which Liqo makes for
// each Accepted slice, and ShadowPod, the consumer's pods on the provider:
// budgets count both.
func crdFiles() []string {
	return []string{
		"authentication.liqo.io_resourceslices.yaml",
		"authentication.liqo.io_tenants.yaml",
		"authentication.liqo.io_identities.yaml",
		"authentication.liqo.io_renews.yaml",
		"offloading.liqo.io_quotas.yaml",
		"offloading.liqo.io_shadowpods.yaml",
	}
}

// ControlPlane is a running kube-apiserver and etcd with the Liqo CRDs and
// sliceclass's own SliceBudget CRD (config/crd) installed.
type ControlPlane struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme's types.
	Client client.Client
	// Scheme holds client-go's types, Liqo's authentication and offloading
	// types, sliceclass.io/v1alpha1 (SliceBudget) and apiextensions/v1.
	Scheme *runtime.Scheme

	env *envtest.Environment
	// certDir keeps the API server's serving certificates across a
	// restart of kube-apiserver (internal/apiserver.Restart), so that
	// clients built from Config stay valid.
	certDir string

	// notStarted says why RunSuite started no control plane ("" when it
	// runs); skipped counts the tests Require skipped for that reason.
	notStarted string
	skipped    atomic.Int64
}

// ErrNoAssets is returned (wrapped) when no kube-apiserver and etcd binaries
// can be found. Its message names the command that builds them.
var ErrNoAssets = errors.New("no envtest binaries (kube-apiserver, etcd): run `go run " + installCommand +
	"` from your module (`make envtest` in the sliceclass repo), or set KUBEBUILDER_ASSETS to a directory holding both (e.g. from setup-envtest)")

// Start is New for one test: it starts a control plane and stops it when
// the test ends (t.Cleanup). Under -short it skips the test. When no
// binaries are found it skips the test, or fails it when the
// SLICECLASS_REQUIRE_ENVTEST environment variable is set. A suite sharing
// one control plane calls RunSuite from TestMain instead.
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("controlplane: " + shortReason)
	}
	cp, err := New()
	if err != nil {
		if errors.Is(err, ErrNoAssets) && os.Getenv(RequireEnv) == "" {
			t.Skipf("controlplane: %v", err)
		}
		t.Fatalf("controlplane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("controlplane: stopping: %v", err)
		}
	})
	return cp
}

// New starts a control plane (an API server and etcd, with Liqo's CRDs and
// the SliceBudget CRD installed) and returns it running: despite its name,
// it does not only build one. It returns once every CRD is served. The
// caller must Stop it; in a test, Start does both.
func New() (*ControlPlane, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	crds, err := crdDir()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range crdFiles() {
		paths = append(paths, filepath.Join(crds, f))
	}
	// The SliceBudget CRD is embedded (config/crd): the one this module's
	// api/v1alpha1 types were generated with, wherever the program runs.
	sliceBudgets, err := crd.SliceBudgets()
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "sliceclass-apiserver-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		// Waiting for the CRDs to be established (envtest's default: 10 s),
		// for the control plane to start and to stop are waits for something
		// to happen: they end as soon as it does, and give up at the tests'
		// one deadline.
		CRDInstallOptions: envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true,
			CRDs:    []*apiextensionsv1.CustomResourceDefinition{sliceBudgets},
			MaxTime: testwait.Timeout},
		Scheme:                   scheme,
		ControlPlaneStartTimeout: testwait.Timeout,
		ControlPlaneStopTimeout:  testwait.Timeout,
	}
	// A directory of our own (envtest replaces a temporary one on each
	// start) keeps the serving certificate and port across a restart.
	env.ControlPlane.GetAPIServer().CertDir = certDir
	// kube-apiserver's graceful shutdown waits for open watches to end, and
	// a running controller always holds some: without a bound, stopping
	// outlasts envtest's stop timeout and the server is killed. Older
	// releases lack the flag (and refuse to start with it).
	if hasFlag(filepath.Join(assets, "kube-apiserver"), watchGraceFlag) {
		env.ControlPlane.GetAPIServer().Configure().Set(watchGraceFlag, "2s")
	}
	// Both die with this process, however it ends (dieWithParent); where
	// they cannot, they are stopped by Stop only, as envtest does.
	_ = dieWithParent(env, assets, certDir)
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("building client: %w", err)
	}
	return &ControlPlane{Config: cfg, Client: cl, Scheme: scheme, env: env, certDir: certDir}, nil
}

// newScheme holds client-go's types, Liqo's authentication and offloading
// types, what the SDK reads and writes (internal/sdkscheme: the groups a
// user's main adds, each with its own AddToScheme), and CRDs.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, authv1beta1.AddToScheme, offloadingv1beta1.AddToScheme, sdkscheme.Add,
		apiextensionsv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// newNotStarted is the ControlPlane RunSuite gives a package when it starts
// none, for reason. Require skips the tests; one that uses it without
// Require fails, each of its requests answered with an error that says to
// call Require, rather than dereferencing a nil Client.
func newNotStarted(reason string) (*ControlPlane, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	refuse := fmt.Errorf("controlplane: %s: a test that uses the control plane calls cp.Require(t) first, which skips it", reason)
	cfg := &rest.Config{Host: "https://controlplane.invalid"}
	cfg.Wrap(func(http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, refuse })
	})
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &ControlPlane{Config: cfg, Client: cl, Scheme: scheme, notStarted: reason}, nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// errNotStarted is what the methods that need the processes return on a
// control plane RunSuite did not start.
var errNotStarted = errors.New("controlplane: not started: call cp.Require(t) first, which skips the test")

// watchGraceFlag bounds how long kube-apiserver's shutdown waits for open
// watches.
const watchGraceFlag = "shutdown-watch-termination-grace-period"

// hasFlag reports whether the binary's --help lists --name.
func hasFlag(binary, name string) bool {
	out, _ := exec.Command(binary, "--help").CombinedOutput()
	return strings.Contains(string(out), "--"+name)
}

// Stop stops the API server and etcd; on a control plane RunSuite did not
// start it does nothing.
func (cp *ControlPlane) Stop() error {
	if cp.env == nil {
		return nil
	}
	err := cp.env.Stop()
	return errors.Join(err, os.RemoveAll(cp.certDir))
}

func init() {
	apiserver.SetRestart(func(x any) error {
		cp, ok := x.(*ControlPlane)
		if !ok {
			return fmt.Errorf("controlplane: restarting the API server of a %T, not a *ControlPlane", x)
		}
		return cp.restartAPIServer()
	})
}

// restartAPIServer stops kube-apiserver and starts it again over the same
// etcd, address and certificates (internal/apiserver.Restart, for the
// SDK's own tests).
func (cp *ControlPlane) restartAPIServer() error {
	if cp.env == nil {
		return errNotStarted
	}
	apiServer := cp.env.ControlPlane.GetAPIServer()
	if err := apiServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := apiServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// AddUser returns a configuration that reaches the API server as the named
// user with a client certificate, in groups. The API server authorizes with
// RBAC, so such a user may do only what Roles bound to it allow: a
// ServiceAccount is the user "system:serviceaccount:NAMESPACE:NAME" in the
// groups "system:serviceaccounts" and "system:serviceaccounts:NAMESPACE".
func (cp *ControlPlane) AddUser(name string, groups ...string) (*rest.Config, error) {
	if cp.env == nil {
		return nil, errNotStarted
	}
	u, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, rest.CopyConfig(cp.Config))
	if err != nil {
		return nil, fmt.Errorf("adding user %q: %w", name, err)
	}
	return u.Config(), nil
}

// CreateNamespace creates a namespace (an existing one is fine).
func (cp *ControlPlane) CreateNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cp.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %q: %w", name, err)
	}
	return nil
}

// AssetsDir finds the directory holding kube-apiserver and etcd, searching in
// order:
//
//  1. KUBEBUILDER_ASSETS, if set (an error if it lacks either binary);
//  2. bin/envtest/k8s-*/ in the nearest enclosing directory that has one
//     (where `make envtest` builds them in the sliceclass repo);
//  3. k8s-*/ in the per-user cache that install-envtest builds into:
//     $SLICECLASS_ENVTEST_DIR, else sliceclass/envtest in os.UserCacheDir.
//
// It returns ErrNoAssets when none holds both binaries.
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		if hasAssets(d) {
			return d, nil
		}
		return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s lacks kube-apiserver or etcd: %w", d, ErrNoAssets)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if d, ok := newestAssets(filepath.Join(dir, "bin", "envtest")); ok {
			return d, nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	if root, err := userCacheRoot(); err == nil {
		if d, ok := newestAssets(root); ok {
			return d, nil
		}
	}
	return "", ErrNoAssets
}

// userCacheRoot is where install-envtest puts its k8s-*/ directories.
func userCacheRoot() (string, error) {
	if d := os.Getenv(AssetsDirEnv); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "sliceclass", "envtest"), nil
}

// newestAssets returns the last k8s-*/ directory under root, in name order,
// that holds both binaries.
func newestAssets(root string) (string, bool) {
	matches, _ := filepath.Glob(filepath.Join(root, "k8s-*"))
	for i := len(matches) - 1; i >= 0; i-- {
		if hasAssets(matches[i]) {
			return matches[i], true
		}
	}
	return "", false
}

func hasAssets(d string) bool {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(d, b)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// crdDir finds Liqo's CRD directory: SLICECLASS_LIQO_CRDS if set, else the
// Liqo module's directory as `go list -m` reports it, else the module cache
// path of the Liqo version this binary was built with.
func crdDir() (string, error) {
	if d := os.Getenv(CRDDirEnv); d != "" {
		return d, nil
	}
	var tried []string
	if out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", liqoModule).Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); dir != "" {
			d := filepath.Join(dir, crdSubdir)
			if isDir(d) {
				return d, nil
			}
			tried = append(tried, d)
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path != liqoModule {
				continue
			}
			if m.Replace != nil {
				m = m.Replace
			}
			cache := os.Getenv("GOMODCACHE")
			if cache == "" {
				if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
					cache = strings.TrimSpace(string(out))
				}
			}
			d := filepath.Join(cache, m.Path+"@"+m.Version, crdSubdir)
			if isDir(d) {
				return d, nil
			}
			tried = append(tried, d)
		}
	}
	return "", fmt.Errorf("cannot find Liqo's CRDs (tried %v): run `go mod download %s` or set %s", tried, liqoModule, CRDDirEnv)
}

func isDir(d string) bool {
	fi, err := os.Stat(d)
	return err == nil && fi.IsDir()
}

// shortReason is why no control plane starts under -short.
const shortReason = "not started under -short"

// RunSuite is the body of a TestMain for a package whose tests share one
// control plane: it starts one into *cp, runs the tests, stops it, and
// returns the exit code.
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.RunSuite(m, &cp)) }
//
// Every test that uses the control plane says so first, with Require; the
// package's other tests (of a Handler on the fake client, of a parser) need
// nothing:
//
//	func TestDecides(t *testing.T) {
//		cp.Require(t)
//		// ... cp.Client, cp.Config
//	}
//
// Under -short, and without envtest binaries, RunSuite starts no control
// plane but still runs the tests: *cp is then a ControlPlane that is not
// running, whose Require skips the test saying why, and RunSuite prints one
// line to standard error, "controlplane: 3 tests skipped: " and the reason,
// so that a plain go test in the package's directory shows it without -v
// (go test given packages shows a passing package's output only with -v).
// With the RequireEnv environment variable set, missing binaries are a
// failure instead: RunSuite prints why and returns 1 without running the
// tests (-short still starts nothing and fails nothing).
func RunSuite(m *testing.M, cp **ControlPlane) int {
	flag.Parse()
	if testing.Short() {
		return runWithout(m, cp, shortReason)
	}
	var err error
	*cp, err = New()
	if err != nil {
		if errors.Is(err, ErrNoAssets) && os.Getenv(RequireEnv) == "" {
			return runWithout(m, cp, err.Error())
		}
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		return 1
	}
	code := m.Run()
	if err := (*cp).Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// runWithout runs the tests with *cp a control plane not started, for
// reason, and reports on standard error how many of them Require skipped.
func runWithout(m *testing.M, cp **ControlPlane, reason string) int {
	var err error
	if *cp, err = newNotStarted(reason); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		return 1
	}
	code := m.Run()
	switch n := (*cp).skipped.Load(); n {
	case 0:
	case 1:
		fmt.Fprintf(os.Stderr, "controlplane: 1 test skipped: %s\n", reason)
	default:
		fmt.Fprintf(os.Stderr, "controlplane: %d tests skipped: %s\n", n, reason)
	}
	return code
}

// Require skips the test when cp is not running, saying why: RunSuite
// starts none under -short or without envtest binaries (see RunSuite). A
// test of a RunSuite package calls it before it uses cp; on a running
// control plane it does nothing. Forgetting it shows under -short: every
// request through cp's Client or Config then fails with an error saying to
// call Require.
func (cp *ControlPlane) Require(t testing.TB) {
	t.Helper()
	if cp == nil {
		t.Fatal("controlplane: Require on a nil *ControlPlane: use the one RunSuite or Start gives")
	}
	if cp.notStarted == "" {
		return
	}
	cp.skipped.Add(1)
	t.Skip("controlplane: " + cp.notStarted)
}
