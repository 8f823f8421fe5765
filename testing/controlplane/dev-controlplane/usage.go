package main

import (
	"fmt"
	"io"
	"strings"
)

// The slice printed for users to create: a slice of class gold in a tenant
// namespace, as Liqo's replicator creates it on the provider (the labels the
// SDK's default selector asks for), then its status as Liqo's
// ResourceSlice controller writes it once it authenticated the consumer. The
// API server drops the status of an object it creates, hence two steps.
const (
	exampleNamespace = "liqo-tenant-consumer"
	exampleSlice     = "demo"
	exampleClass     = "gold"
)

// kubectlStep is one command of the slice's creation: kubectl's arguments,
// and what it reads on its standard input.
type kubectlStep struct {
	args  []string
	stdin string
}

// sliceSteps create the example slice and show it.
func sliceSteps() []kubectlStep {
	manifest := `apiVersion: v1
kind: Namespace
metadata:
  name: ` + exampleNamespace + `
---
apiVersion: authentication.liqo.io/v1beta1
kind: ResourceSlice
metadata:
  name: ` + exampleSlice + `
  namespace: ` + exampleNamespace + `
  labels:
    liqo.io/originID: consumer
    liqo.io/replicated: "true"
spec:
  class: ` + exampleClass + `
  consumerClusterID: consumer
  providerClusterID: provider
  resources:
    cpu: "2"
    memory: 4Gi
`
	authenticated := `{"status":{"conditions":[{"type":"Authentication","status":"Accepted",` +
		`"reason":"ResourceSliceAuthenticationAccepted","message":"ResourceSlice authentication accepted",` +
		`"lastTransitionTime":"2025-01-01T00:00:00Z"}]}}`
	const resource = "resourceslices.authentication.liqo.io"
	return []kubectlStep{
		{args: []string{"apply", "-f", "-"}, stdin: manifest},
		{args: []string{"patch", resource, exampleSlice, "-n", exampleNamespace, "--subresource=status", "--type=merge", "-p", authenticated}},
		{args: []string{"get", resource, "-A"}},
	}
}

// shell renders a step as a line of shell, its standard input as a here
// document.
func (s kubectlStep) shell() string {
	words := []string{"kubectl"}
	for _, a := range s.args {
		if strings.ContainsAny(a, ` "{}'$`) {
			a = "'" + a + "'"
		}
		words = append(words, a)
	}
	line := strings.Join(words, " ")
	if s.stdin == "" {
		return line
	}
	return line + " <<'EOF'\n" + s.stdin + "EOF"
}

// printUsage tells where the control plane is and how to use it.
func printUsage(out io.Writer, host, assets, kubeconfig string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "dev-controlplane: kube-apiserver at %s with Liqo's CRDs and SliceBudget's (binaries from %s)\n", host, assets)
	fmt.Fprintf(&b, "kubeconfig: %s\n\n", kubeconfig)
	fmt.Fprintf(&b, "Run your manager against it, from your module:\n\n")
	fmt.Fprintf(&b, "KUBECONFIG=%s go run ./yourmanager\n\n", kubeconfig)
	fmt.Fprintf(&b, "or the SDK's example manager, serving class %s:\n\n", exampleClass)
	fmt.Fprintf(&b, "KUBECONFIG=%s go run github.com/sliceclass/sliceclass/examples/manager --class-name %s --cap cpu=4,memory=8Gi,pods=110\n\n",
		kubeconfig, exampleClass)
	fmt.Fprintf(&b, "Create a slice of class %s as Liqo leaves it on a provider (the object, then its authenticated status), and see its decision:\n\n", exampleClass)
	fmt.Fprintf(&b, "export KUBECONFIG=%s\n", kubeconfig)
	for _, s := range sliceSteps() {
		fmt.Fprintf(&b, "%s\n", s.shell())
	}
	fmt.Fprintf(&b, "\nRunning until interrupted (Ctrl-C); the kubeconfig is removed on the way out.\n")
	_, err := io.WriteString(out, b.String())
	return err
}
