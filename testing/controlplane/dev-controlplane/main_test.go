package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// What a user does with dev-controlplane: run it, point a manager at the
// kubeconfig it wrote, create a slice with the commands it printed, see the
// decision, interrupt it. It stops cleanly and takes its kubeconfig away.
func TestRunServesUntilInterrupted(t *testing.T) {
	envkit.SkipWithoutControlPlane(t) // run starts one
	path := filepath.Join(t.TempDir(), "dev.kubeconfig")
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	// run writes to a file, as to a terminal, and the test reads it as it
	// goes.
	outPath := filepath.Join(t.TempDir(), "out")
	outFile, err := os.Create(outPath)
	require.NoError(t, err)
	defer func() { _ = outFile.Close() }()
	output := func() string {
		b, err := os.ReadFile(outPath)
		require.NoError(t, err)
		return string(b)
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-kubeconfig", path}, outFile, testr.New(t)) }()
	envkit.Eventually(t, "the control plane's kubeconfig and instructions", func() bool {
		select {
		case err := <-done:
			t.Fatalf("run ended before it printed its instructions: %v\n%s", err, output())
		default:
		}
		return strings.Contains(output(), "Running until interrupted")
	})

	// The kubeconfig reaches the API server, which serves Liqo's types.
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err, "loading the kubeconfig run wrote")
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, authv1beta1.AddToScheme(scheme))
	require.NoError(t, offloadingv1beta1.AddToScheme(scheme))
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	var slices authv1beta1.ResourceSliceList
	require.NoError(t, cl.List(context.Background(), &slices), "listing ResourceSlices through the kubeconfig")

	// A manager pointed at it decides the slice the printed commands create.
	m := envkit.StartManagerWith(t, cfg, envkit.ManagerOptions(t, scheme), func(mgr manager.Manager) error {
		return resourceslice.AddToManager(mgr, exampleClass, handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
			rs.Status.Resources = rs.Spec.Resources.DeepCopy()
			conditions.Accept(rs, "Granted", "")
			return ctrl.Result{}, nil
		}))
	})
	createExampleSlice(t, output(), path, cfg, cl)
	wait, cancel := context.WithTimeout(context.Background(), envkit.WaitTimeout)
	defer cancel()
	got, err := slicetest.WaitForDecision(wait, cl, types.NamespacedName{Namespace: "liqo-tenant-acme", Name: exampleSlice})
	require.NoError(t, err)
	assert.True(t, conditions.IsAccepted(got), "the example slice is decided by a manager serving %s", exampleClass)
	assert.True(t, conditions.IsAuthenticated(got), "the control plane authenticated the slice kubectl created")
	assert.NotNil(t, got.Status.AuthParams, "with authParams, as Liqo writes them")
	checkPlaysLiqo(t, cl)
	m.Stop()

	interrupt()
	select {
	case err := <-done:
		require.NoError(t, err, "stopping")
	case <-time.After(envkit.WaitTimeout):
		t.Fatalf("run did not return within %s of the interruption", envkit.WaitTimeout)
	}
	assert.NoFileExists(t, path, "the kubeconfig of a stopped control plane is removed")
	for _, want := range []string{"KUBECONFIG=" + path + " go run ./yourmanager", "kubectl get resourceslices.authentication.liqo.io -A",
		"liqo-tenant-acme (consumer acme)", "liqo-tenant-globex (consumer globex)", "dev-controlplane: stopped"} {
		assert.Contains(t, output(), want)
	}
}

// checkPlaysLiqo checks what the control plane does in Liqo's place: the
// consumers' tenant namespaces as Liqo labels them, with a Tenant each; a
// Quota (Liqo's QuotaCreator) for the Accepted example slice; the
// authentication of a slice outside its consumer's tenant namespace denied.
func checkPlaysLiqo(t *testing.T, cl client.Client) {
	t.Helper()
	ctx := context.Background()
	for _, consumer := range []string{"acme", "globex"} {
		var ns corev1.Namespace
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Name: "liqo-tenant-" + consumer}, &ns))
		for k, v := range map[string]string{"liqo.io/remote-cluster-id": consumer, "liqo.io/tenant-namespace": "true",
			"pod-security.kubernetes.io/enforce": "privileged"} {
			assert.Equal(t, v, ns.Labels[k], "label %s of %s", k, ns.Name)
		}
		var tenants authv1beta1.TenantList
		require.NoError(t, cl.List(ctx, &tenants, client.InNamespace(ns.Name)))
		if assert.Len(t, tenants.Items, 1, "the Tenant of %s", consumer) {
			assert.Equal(t, authv1beta1.TenantConditionActive, tenants.Items[0].Spec.TenantCondition)
		}
	}
	envkit.Eventually(t, "Liqo's QuotaCreator's Quota for the Accepted slice", func() bool {
		var quotas offloadingv1beta1.QuotaList
		require.NoError(t, cl.List(ctx, &quotas, client.InNamespace("liqo-tenant-acme")))
		return len(quotas.Items) == 1
	})

	stray := slicetest.NewSlice("stray", slicetest.Unauthenticated(), slicetest.WithClass(exampleClass),
		slicetest.WithNamespace("liqo-tenant-acme"), slicetest.WithConsumer("globex"))
	require.NoError(t, cl.Create(ctx, stray))
	envkit.Eventually(t, "globex's slice in acme's tenant namespace denied authentication", func() bool {
		require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(stray), stray))
		c := conditions.Get(stray, authv1beta1.ResourceSliceConditionTypeAuthentication)
		return c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied
	})
}

// createExampleSlice runs the kubectl commands run printed, as a user
// pastes them into a shell; without kubectl it makes the same requests
// through the client.
func createExampleSlice(t *testing.T, printed, kubeconfig string, cfg *rest.Config, cl client.Client) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err == nil {
		script := printedCommands(t, printed)
		sh := exec.Command("sh", "-e")
		sh.Stdin = strings.NewReader(script)
		sh.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		shOut, err := sh.CombinedOutput()
		require.NoError(t, err, "the printed commands:\n%s\nfailed:\n%s", script, shOut)
		t.Logf("the printed commands, run by sh:\n%s", shOut)
		assert.Contains(t, string(shOut), exampleSlice, "kubectl get lists the slice")
		return
	}
	t.Log("no kubectl on PATH: the printed commands' requests are made through the client")
	ctx := context.Background()
	steps := sliceSteps("liqo-tenant-acme", "acme")
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(steps[0].stdin)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(doc, &obj.Object))
		require.NoError(t, cl.Create(ctx, obj))
	}
}

// printedCommands is the shell run printed to create the slice: from the
// export line to the first blank line.
func printedCommands(t *testing.T, printed string) string {
	t.Helper()
	start := strings.Index(printed, "export KUBECONFIG=")
	require.GreaterOrEqual(t, start, 0, "no export line in:\n%s", printed)
	script, _, _ := strings.Cut(printed[start:], "\n\n")
	return script + "\n"
}

// A file at -kubeconfig that run did not write is never overwritten (it may
// be the user's own); one it wrote and left behind (killed) is.
func TestRunKeepsAForeignKubeconfig(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(foreign, []byte("apiVersion: v1\nkind: Config\ncurrent-context: prod\n"), 0o600))
	err := run(context.Background(), []string{"-kubeconfig", foreign}, io.Discard, testr.New(t))
	require.ErrorContains(t, err, "is not a kubeconfig dev-controlplane wrote")
	got, err := os.ReadFile(foreign)
	require.NoError(t, err)
	assert.Contains(t, string(got), "current-context: prod", "left as it was")

	leftover := filepath.Join(dir, "leftover")
	require.NoError(t, controlplane.WriteKubeconfig(&rest.Config{Host: "https://127.0.0.1:1"}, leftover))
	assert.NoError(t, mayWrite(leftover), "a kubeconfig a killed run left behind")
	assert.NoError(t, mayWrite(filepath.Join(dir, "absent")))
}

func TestRunRefusesArguments(t *testing.T) {
	assert.ErrorContains(t, run(context.Background(), []string{"extra"}, io.Discard, testr.New(t)), "unexpected arguments")
	assert.ErrorIs(t, run(context.Background(), []string{"-h"}, io.Discard, testr.New(t)), flag.ErrHelp)
	for _, bad := range []string{"", ",", "Acme", "acme,acme", "a_b"} {
		assert.ErrorContains(t, run(context.Background(), []string{"-consumers", bad}, io.Discard, testr.New(t)), "-consumers", "-consumers %q", bad)
	}
}
