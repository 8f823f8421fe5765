package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The slice printed for users to create: a slice of class gold in the
// first consumer's tenant namespace, as Liqo's replicator creates it on the
// provider (the labels the SDK's default selector asks for). The control
// plane authenticates it, as Liqo's ResourceSlice controller does.
const (
	exampleSlice = "demo"
	exampleClass = "gold"
)

// sliceColumns are the columns that show what each slice got, in kubectl's
// custom-columns syntax (header, then JSONPath); hack/slices.columns holds
// the same as a custom-columns file.
var sliceColumns = [][2]string{
	{"NAMESPACE", ".metadata.namespace"},
	{"NAME", ".metadata.name"},
	{"CLASS", ".spec.class"},
	{"CONSUMER", ".spec.consumerClusterID"},
	{"DECISION", `.status.conditions[?(@.type=="Resources")].status`},
	{"REASON", `.status.conditions[?(@.type=="Resources")].reason`},
	{"REQUEST", ".spec.resources"},
	{"GRANT", ".status.resources"},
}

// customColumns is sliceColumns as kubectl's -o custom-columns= value.
func customColumns() string {
	cols := make([]string, len(sliceColumns))
	for i, c := range sliceColumns {
		cols[i] = c[0] + ":" + c[1]
	}
	return "custom-columns=" + strings.Join(cols, ",")
}

// kubectlStep is one command of the slice's creation: kubectl's arguments,
// and what it reads on its standard input.
type kubectlStep struct {
	args  []string
	stdin string
}

// sliceSteps create the example slice of consumer in namespace and list
// the slices with what each got.
func sliceSteps(namespace, consumer string) []kubectlStep {
	manifest := `apiVersion: authentication.liqo.io/v1beta1
kind: ResourceSlice
metadata:
  name: ` + exampleSlice + `
  namespace: ` + namespace + `
  labels:
    liqo.io/originID: ` + consumer + `
    liqo.io/replicated: "true"
spec:
  class: ` + exampleClass + `
  consumerClusterID: ` + consumer + `
  providerClusterID: provider
  resources:
    cpu: "2"
    memory: 4Gi
`
	const resource = "resourceslices.authentication.liqo.io"
	return []kubectlStep{
		{args: []string{"apply", "-f", "-"}, stdin: manifest},
		{args: []string{"get", resource, "-A", "-o", customColumns()}},
	}
}

// shellSafe matches the words a shell reads as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./=:,+-]+$`)

// shell renders a step as a line of shell, its standard input as a here
// document.
func (s kubectlStep) shell() string {
	words := []string{"kubectl"}
	for _, a := range s.args {
		if !shellSafe.MatchString(a) {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words = append(words, a)
	}
	line := strings.Join(words, " ")
	if s.stdin == "" {
		return line
	}
	return line + " <<'EOF'\n" + s.stdin + "EOF"
}

// printUsage tells where the control plane is, which tenant namespaces it
// holds (namespaces[i] is consumers[i]'s) and how to use it.
func printUsage(out io.Writer, host, assets, kubeconfig string, consumers, namespaces []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "dev-controlplane: kube-apiserver at %s with Liqo's CRDs and SliceBudget's (binaries from %s)\n", host, assets)
	fmt.Fprintf(&b, "kubeconfig: %s\n\n", kubeconfig)
	fmt.Fprintf(&b, "It plays Liqo's part on a provider: consumers' tenant namespaces, each with an Active Tenant,\n")
	for i, ns := range namespaces {
		fmt.Fprintf(&b, "  %s (consumer %s)\n", ns, consumers[i])
	}
	fmt.Fprintf(&b, "the authentication of a replicated slice created in one (Authentication Accepted, authParams),\n")
	fmt.Fprintf(&b, "and Liqo's QuotaCreator (a Quota for each Accepted slice).\n\n")
	fmt.Fprintf(&b, "Run your manager against it, from your module:\n\n")
	fmt.Fprintf(&b, "KUBECONFIG=%s go run ./yourmanager\n\n", kubeconfig)
	fmt.Fprintf(&b, "or the SDK's example manager, serving class %s:\n\n", exampleClass)
	fmt.Fprintf(&b, "KUBECONFIG=%s go run github.com/sliceclass/sliceclass/examples/manager --class-name %s --cap cpu=4,memory=8Gi,pods=110\n\n",
		kubeconfig, exampleClass)
	fmt.Fprintf(&b, "Create a slice of class %s as Liqo's replicator leaves it on a provider, and see what each slice got:\n\n", exampleClass)
	fmt.Fprintf(&b, "export KUBECONFIG=%s\n", kubeconfig)
	for _, s := range sliceSteps(namespaces[0], consumers[0]) {
		fmt.Fprintf(&b, "%s\n", s.shell())
	}
	fmt.Fprintf(&b, "\nRunning until interrupted (Ctrl-C); the kubeconfig is removed on the way out.\n")
	_, err := io.WriteString(out, b.String())
	return err
}
