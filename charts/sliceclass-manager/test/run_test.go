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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
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
	d, c := managerContainer(t, objs)
	v := parseArgs(t, c)
	sa := d.Spec.Template.Spec.ServiceAccountName
	dir := t.TempDir()

	// What the kubelet would provide: the mounted classes file, the
	// ServiceAccount's credentials, the downward API's POD_NAME.
	classesFile := filepath.Join(dir, "classes.yaml")
	require.NoError(t, os.WriteFile(classesFile, []byte(classesMount(t, objs, d, c, v.ClassesFile)), 0o600))
	user, err := cp.AddUser("system:serviceaccount:"+ns+":"+sa, "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	require.NoError(t, err)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: user.Host, CertificateAuthorityData: user.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{ClientCertificateData: user.CertData, ClientKeyData: user.KeyData}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, kubeconfig))
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)

	// The rendered args, but for the paths and ports of this machine.
	var args []string
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--classes-file="):
			a = "--classes-file=" + classesFile
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + metricsAddr
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probeAddr
		}
		args = append(args, a)
	}
	args = append(args, "--kubeconfig="+kubeconfig)
	const podName = "sliceclass-manager-0"
	log := &lockedBuffer{}
	cmd := exec.Command(managerBinary(t), args...)
	cmd.Env = append(os.Environ(), "POD_NAME="+podName)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-done
		if t.Failed() {
			t.Logf("manager exited (%v); its log:\n%s", err, log.String())
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eventually(ctx, t, "the manager ready on /readyz", func() bool { return httpOK("http://" + probeAddr + "/readyz") })

	lease := &coordinationv1.Lease{}
	eventually(ctx, t, "the class Lease of gold held by the pod", func() bool {
		err := cp.Client.Get(ctx, types.NamespacedName{Namespace: v.ClassLeaseNamespace, Name: "sliceclass-class-gold"}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == podName
	})
	assert.Equal(t, "gold", lease.Labels["sliceclass.io/class"], "kubectl get leases -l %s lists it", "sliceclass.io/class")

	// A consumer's slice of the default class, within its caps.
	tenantNS := ns + "-tenant"
	require.NoError(t, cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS,
		Labels: map[string]string{"liqo.io/remote-cluster-id": slicetest.DefaultConsumer}}}))
	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)
	tenant.Namespace = tenantNS
	require.NoError(t, cp.Client.Create(ctx, tenant))
	rs := slicetest.NewSlice("chart", slicetest.WithNamespace(tenantNS), slicetest.WithClass("gold"),
		slicetest.WithRequest(corev1.ResourceCPU, "1"))
	require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
	decided, err := slicetest.WaitForDecision(ctx, cp.Client, client.ObjectKeyFromObject(rs))
	require.NoError(t, err)
	cond := conditions.Get(decided, conditions.Resources)
	require.NotNil(t, cond)
	assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, cond.Status, "%s: %s", cond.Reason, cond.Message)

	eventually(ctx, t, "the decision counted on /metrics", func() bool {
		body, ok := httpGet("http://" + metricsAddr + "/metrics")
		return ok && strings.Contains(body, `sliceclass_decisions_total{class="gold",outcome="accepted"} 1`)
	})

	// A clean stop: the process exits 0 and gives the class Lease back.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		done <- err // for the clean-up
		require.NoError(t, err, "the manager's exit")
	case <-ctx.Done():
		t.Fatal("the manager did not stop on SIGTERM")
	}
	assert.NotContains(t, strings.ToLower(log.String()), "forbidden", "a request refused with the chart's RBAC")
}

// managerBinary builds the example manager from this repository.
func managerBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "manager")
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	cmd := exec.Command("go", "build", "-o", bin, "./examples/manager")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the manager:\n%s", out)
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
	resp, err := http.Get(url) //nolint:gosec // a test's own loopback address
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

// eventually polls cond until it holds, failing the test with what it
// waited for when ctx ends first.
func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
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
