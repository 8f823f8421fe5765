package charttest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// TestDefaultsServe runs the example manager as `helm install` with the
// defaults runs it: the rendered container's args and environment, the
// rendered ConfigMap's classes file, and the identity of the rendered
// ServiceAccount with only the rendered RBAC. It must become ready, hold
// the class Lease and decide a slice of the default class, without one
// request refused.
func TestDefaultsServe(t *testing.T) {
	cp.Require(t)
	const ns = "sc-run"
	objs := render(t, ns, "")
	install(t, objs)
	_, c := managerContainer(t, objs)
	v := parseArgs(t, c)
	m := serve(t, ns, objs, managerBinary(t, repoRoot, "./examples/manager"))

	// Each wait below gives up after envkit.WaitTimeout on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.ready(ctx, t)

	lease := &coordinationv1.Lease{}
	eventually(ctx, t, "the class Lease of gold held by the pod", func() bool {
		err := cp.Client.Get(ctx, types.NamespacedName{Namespace: v.ClassLeaseNamespace, Name: "sliceclass-class-gold"}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == podName
	})
	assert.Equal(t, "gold", lease.Labels["sliceclass.io/class"], "kubectl get leases -l %s lists it", "sliceclass.io/class")

	// A consumer's slice of the default class, within its caps.
	rs := consumerSlice(ctx, t, ns, "chart", "gold")
	decided := decision(ctx, t, rs)
	cond := conditions.Get(decided, authv1beta1.ResourceSliceConditionTypeResources)
	require.NotNil(t, cond)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, cond.Status, "%s: %s", cond.Reason, cond.Message)

	eventually(ctx, t, "the decision counted on /metrics", func() bool {
		body, ok := httpGet("http://" + m.metricsAddr + "/metrics")
		return ok && strings.Contains(body, `sliceclass_decisions_total{class="gold",outcome="accepted"} 1`)
	})
	election := &coordinationv1.Lease{}
	require.NoError(t, cp.Client.Get(ctx, types.NamespacedName{Namespace: v.LeaderElectionNamespace, Name: v.LeaderElectionID}, election))
	require.NotEmpty(t, ptr.Deref(election.Spec.HolderIdentity, ""), "the leader-election Lease held while it serves")
	m.stop(ctx, t)

	// A clean stop (a rolling update's) releases the leader-election
	// Lease, so that a warm standby takes over at once rather than after
	// the Lease expires.
	require.NoError(t, cp.Client.Get(ctx, types.NamespacedName{Namespace: v.LeaderElectionNamespace, Name: v.LeaderElectionID}, election))
	assert.Empty(t, ptr.Deref(election.Spec.HolderIdentity, ""), "the leader-election Lease released on SIGTERM")
}

// TestYourOwnManagerServes deploys a manager built from a module outside
// the SDK's (testdata/billingmanager: its own go.mod, importing the SDK and
// its standard flags) with the chart: its image, the rendered args
// unchanged plus flags of its own in extraArgs, and least-privilege RBAC:
// for its billing records (ConfigMaps read cluster-wide, written in the
// billing namespace only), for the one Secret it reads (get on that name,
// in its namespace: rbac.namespaceRules) and for the unserved reporter it
// runs (list on the class Leases, in their namespace:
// rbac.unservedReporter). It must become ready, decide a slice, write its
// billing record with the Secret's rate, and report a slice of a class
// nobody serves, without one request refused.
func TestYourOwnManagerServes(t *testing.T) {
	cp.Require(t)
	const ns = "sc-own"
	const billing, rates = ns + "-billing", ns + "-rates"
	objs := render(t, ns, `
image: {repository: billing-manager, tag: test}
classes: {classes: [{name: gold}]}
extraArgs: [--billing-namespace=`+billing+`, --rates-secret=`+rates+`/rates, --report-unserved-after=1s]
rbac:
  ownedTypes:
    - {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, patch, delete]}
  ownedTypesNamespaces: [`+billing+`]
  namespaceRules:
    `+rates+`:
      - {apiGroups: [""], resources: [secrets], resourceNames: [rates], verbs: [get]}
  unservedReporter: true
`)
	_, c := managerContainer(t, objs)
	assert.Equal(t, "billing-manager:test", c.Image)
	install(t, objs) // creates the billing and rates namespaces, which hold the Roles
	setup, cancelSetup := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancelSetup()
	require.NoError(t, cp.Client.Create(setup, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: rates, Name: "rates"}, Data: map[string][]byte{"cpu": []byte("0.04")},
	}))
	m := serve(t, ns, objs, managerBinary(t, "testdata/billingmanager", "."))

	// Each wait below gives up after envkit.WaitTimeout on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.ready(ctx, t)

	rs := consumerSlice(ctx, t, ns, "own", "gold")
	decided := decision(ctx, t, rs)
	cond := conditions.Get(decided, authv1beta1.ResourceSliceConditionTypeResources)
	require.NotNil(t, cond)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, cond.Status, "%s: %s", cond.Reason, cond.Message)
	assert.Equal(t, "Granted", cond.Reason, "the user's policy decided")

	record := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: billing, Name: "bill-" + rs.Namespace + "-" + rs.Name}
	eventually(ctx, t, "the billing record written in "+billing, func() bool { return cp.Client.Get(ctx, key, record) == nil })
	assert.Equal(t, "1", record.Data["cpu"])
	assert.Equal(t, "0.04", record.Data["rate"], "read from the one Secret granted")
	assert.Equal(t, "gold", record.Labels["sliceclass.io/class"], "applied by the SDK for the class")

	// A slice of a class nobody serves: the reporter lists the class
	// Leases (gold's is live, bronze has none) and counts it.
	unserved := slicetest.NewSlice("unserved", slicetest.WithNamespace(rs.Namespace), slicetest.WithClass("bronze"),
		slicetest.WithRequest(corev1.ResourceCPU, "1"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, unserved))
	eventually(ctx, t, "the bronze slice counted as unserved on /metrics", func() bool {
		body, ok := httpGet("http://" + m.metricsAddr + "/metrics")
		return ok && strings.Contains(body, `sliceclass_unserved_slices{class="bronze"} 1`)
	})
	body, _ := httpGet("http://" + m.metricsAddr + "/metrics")
	assert.NotContains(t, body, `sliceclass_unserved_slices{class="gold"} 1`, "gold's Lease is live")
	m.stop(ctx, t)
}

// podName is the POD_NAME the tests give a manager, as the downward API does.
const podName = "sliceclass-manager-0"

// process is a manager process run as the rendered Deployment runs it.
type process struct {
	cmd                    *exec.Cmd
	done                   chan error
	log                    *lockedBuffer
	metricsAddr, probeAddr string
}

// serve runs bin as the rendered Deployment's container runs: with the
// rendered args (but for the paths and ports of this machine) and
// environment, the rendered ConfigMap's classes file, and the identity of
// the rendered ServiceAccount with only the rendered RBAC. It is killed
// when the test ends, and its log shown if the test failed.
func serve(t *testing.T, ns string, objs []rendered, bin string) *process {
	t.Helper()
	d, c := managerContainer(t, objs)
	sa := d.Spec.Template.Spec.ServiceAccountName
	dir := t.TempDir()

	// What the kubelet would provide: the mounted classes file, the
	// ServiceAccount's credentials, the downward API's POD_NAME.
	var renderedFile string
	for _, a := range c.Args {
		if f, ok := strings.CutPrefix(a, "--classes-file="); ok {
			renderedFile = f
		}
	}
	require.NotEmpty(t, renderedFile, "the rendered args name a classes file")
	classesFile := filepath.Join(dir, "classes.yaml")
	require.NoError(t, os.WriteFile(classesFile, []byte(classesMount(t, objs, d, c, renderedFile)), 0o600))
	user, err := cp.AddUser("system:serviceaccount:"+ns+":"+sa, "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	require.NoError(t, err)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: user.Host, CertificateAuthorityData: user.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{ClientCertificateData: user.CertData, ClientKeyData: user.KeyData}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, kubeconfig))
	m := &process{metricsAddr: freeAddr(t), probeAddr: freeAddr(t), log: &lockedBuffer{}, done: make(chan error, 1)}

	var args []string
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--classes-file="):
			a = "--classes-file=" + classesFile
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + m.metricsAddr
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + m.probeAddr
		}
		args = append(args, a)
	}
	args = append(args, "--kubeconfig="+kubeconfig)
	m.cmd = exec.Command(bin, args...)
	m.cmd.Env = append(os.Environ(), "POD_NAME="+podName)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	require.NoError(t, m.cmd.Start())
	go func() { m.done <- m.cmd.Wait() }()
	t.Cleanup(func() {
		_ = m.cmd.Process.Kill()
		err := <-m.done
		if t.Failed() {
			t.Logf("manager exited (%v); its log:\n%s", err, m.log.String())
		}
	})
	return m
}

// ready waits until the manager answers /readyz, failing at once if it
// exits first.
func (m *process) ready(ctx context.Context, t *testing.T) {
	t.Helper()
	eventually(ctx, t, "the manager ready on /readyz", func() bool {
		select {
		case err := <-m.done:
			m.done <- err // for the clean-up
			t.Fatalf("the manager exited before it was ready: %v", err)
		default:
		}
		return httpOK("http://" + m.probeAddr + "/readyz")
	})
}

// stop stops the manager as the kubelet does, with SIGTERM, and checks a
// clean exit (within envkit.WaitTimeout), with no request refused by the
// chart's RBAC on the way.
func (m *process) stop(ctx context.Context, t *testing.T) {
	t.Helper()
	require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-m.done:
		m.done <- err // for the clean-up
		require.NoError(t, err, "the manager's exit")
	case <-ctx.Done():
		t.Fatal("the manager did not stop on SIGTERM")
	case <-time.After(envkit.WaitTimeout):
		t.Fatalf("the manager did not stop within %s of SIGTERM", envkit.WaitTimeout)
	}
	assert.NotContains(t, strings.ToLower(m.log.String()), "forbidden", "a request refused with the chart's RBAC")
}

// consumerSlice creates what Liqo leaves on a provider for a consumer: a
// tenant namespace (ns-tenant) and an Active Tenant, and in it a slice of
// class asking for 1 CPU.
func consumerSlice(ctx context.Context, t *testing.T, ns, name, class string) *authv1beta1.ResourceSlice {
	t.Helper()
	tenantNS := ns + "-tenant"
	require.NoError(t, envkit.CreateTenantNamespace(ctx, cp.Client, tenantNS, slicetest.DefaultConsumer))
	_, err := envkit.CreateTenant(ctx, cp.Client, tenantNS, slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)
	require.NoError(t, err)
	rs := slicetest.NewSlice(name, slicetest.WithNamespace(tenantNS), slicetest.WithClass(class),
		slicetest.WithRequest(corev1.ResourceCPU, "1"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	return rs
}

// managerBinary builds the main package pkg of the module in dir (relative
// to this package): the example manager, or a user's.
func managerBinary(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "manager")
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = abs
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the manager in %s:\n%s", dir, out)
	return bin
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// httpGet returns the body of a 200 answer.
func httpGet(url string) (string, bool) {
	hc := &http.Client{Timeout: 5 * time.Second} // a manager that hangs fails the poll, not the test run
	resp, err := hc.Get(url)                     //nolint:gosec // a test's own loopback address
	if err != nil {
		return "", false
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return string(body), err == nil && resp.StatusCode == http.StatusOK
}

// httpOK reports whether url answers 200.
func httpOK(url string) bool {
	_, ok := httpGet(url)
	return ok
}

// decision waits for rs's decision (slicetest.WaitForDecision), for up to
// envkit.WaitTimeout, and returns the decided slice.
func decision(ctx context.Context, t *testing.T, rs *authv1beta1.ResourceSlice) *authv1beta1.ResourceSlice {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, envkit.WaitTimeout)
	defer cancel()
	decided, err := slicetest.WaitForDecision(ctx, cp.Client, client.ObjectKeyFromObject(rs))
	require.NoError(t, err, "waiting for slice %s/%s's decision", rs.Namespace, rs.Name)
	return decided
}

// eventually polls cond until it holds, failing the test with what it
// waited for when ctx ends or envkit.WaitTimeout passes first.
func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, envkit.WaitTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// lockedBuffer collects the manager's output from two pipes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
