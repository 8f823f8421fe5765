package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	etcdPackage       = "go.etcd.io/etcd/server/v3"
	kubernetesModule  = "k8s.io/kubernetes"
	apiserverPackage  = "k8s.io/kubernetes/cmd/kube-apiserver"
	kubectlPackage    = "k8s.io/kubernetes/cmd/kubectl"
	componentBaseVers = "k8s.io/component-base/version"
)

// installer builds etcd and kube-apiserver (and kubectl, when asked) into
// binDir, each in its own throwaway module under workDir.
type installer struct {
	binDir      string
	workDir     string
	etcdVersion string
	kubeVersion string
	// kubectl asks for kubectl of kubeVersion too.
	kubectl  bool
	progress io.Writer
	start    time.Time
}

// install builds each binary that is missing or reports another version,
// then checks them.
func (in *installer) install(ctx context.Context) error {
	if err := os.MkdirAll(in.binDir, 0o755); err != nil {
		return err
	}
	etcd := filepath.Join(in.binDir, "etcd")
	etcdWant := "etcd Version: " + strings.TrimPrefix(in.etcdVersion, "v")
	apiserver := filepath.Join(in.binDir, "kube-apiserver")
	apiserverWant := "Kubernetes " + in.kubeVersion
	kubectl := filepath.Join(in.binDir, "kubectl")
	kubectlWant := "Client Version: " + in.kubeVersion
	kubectlReady := func() bool { return !in.kubectl || reportsVersion(ctx, kubectl, kubectlWant, "version", "--client") }

	missing := !reportsVersion(ctx, etcd, etcdWant, "--version") || !reportsVersion(ctx, apiserver, apiserverWant, "--version")
	if missing {
		in.printf("envtest: building etcd %s and kube-apiserver %s from source into %s "+
			"(cold: about 10 minutes on an idle 2-core machine; the go tool's output goes to build.log under %s)",
			in.etcdVersion, in.kubeVersion, in.binDir, in.workDir)
	}
	if !reportsVersion(ctx, etcd, etcdWant, "--version") {
		if err := in.component(ctx, "etcd", in.etcdVersion, in.buildEtcd); err != nil {
			return err
		}
	}
	if !reportsVersion(ctx, apiserver, apiserverWant, "--version") {
		if err := in.component(ctx, "kube-apiserver", in.kubeVersion, in.buildAPIServer); err != nil {
			return err
		}
	}
	if !kubectlReady() {
		in.printf("envtest: building kubectl %s from source into %s (cold: a few more minutes)", in.kubeVersion, in.binDir)
		if err := in.component(ctx, "kubectl", in.kubeVersion, in.buildKubectl); err != nil {
			return err
		}
	}
	if !reportsVersion(ctx, etcd, etcdWant, "--version") {
		return fmt.Errorf("%s does not report %q", etcd, etcdWant)
	}
	if !reportsVersion(ctx, apiserver, apiserverWant, "--version") {
		return fmt.Errorf("%s does not report %q", apiserver, apiserverWant)
	}
	if !kubectlReady() {
		return fmt.Errorf("%s does not report %q", kubectl, kubectlWant)
	}
	in.printf("envtest: assets in %s", in.binDir)
	return nil
}

// buildEtcd resolves etcd's server module as a tool of the throwaway module
// and compiles it.
func (in *installer) buildEtcd(ctx context.Context, b *build) error {
	b.phase("resolving modules...")
	if err := b.initModule(ctx, "envtest.local/etcd"); err != nil {
		return err
	}
	if err := b.goCmd(ctx, "get", "-tool", etcdPackage+"@"+in.etcdVersion); err != nil {
		return err
	}
	b.phase("compiling...")
	return b.compile(ctx, filepath.Join(in.binDir, "etcd"), "", etcdPackage)
}

// buildAPIServer compiles cmd/kube-apiserver of k8s.io/kubernetes with the
// version stamped in.
func (in *installer) buildAPIServer(ctx context.Context, b *build) error {
	minor, err := in.requireKubernetes(ctx, b, "envtest.local/kubeapiserver")
	if err != nil {
		return err
	}
	// The blank import keeps kube-apiserver's dependencies through tidy.
	src := "package main\n\nimport _ \"" + apiserverPackage + "/app\"\n"
	if err := os.WriteFile(filepath.Join(b.dir, "main.go"), []byte(src), 0o644); err != nil {
		return err
	}
	if err := b.goCmd(ctx, "mod", "tidy"); err != nil {
		return err
	}
	b.phase("compiling...")
	return b.compile(ctx, filepath.Join(in.binDir, "kube-apiserver"), in.versionFlags(minor), apiserverPackage)
}

// buildKubectl compiles cmd/kubectl of k8s.io/kubernetes, a tool of the
// throwaway module, with the version stamped in.
func (in *installer) buildKubectl(ctx context.Context, b *build) error {
	minor, err := in.requireKubernetes(ctx, b, "envtest.local/kubectl")
	if err != nil {
		return err
	}
	// The tool directive keeps kubectl's dependencies through tidy.
	if err := b.goCmd(ctx, "mod", "edit", "-tool="+kubectlPackage); err != nil {
		return err
	}
	if err := b.goCmd(ctx, "mod", "tidy"); err != nil {
		return err
	}
	b.phase("compiling...")
	return b.compile(ctx, filepath.Join(in.binDir, "kubectl"), in.versionFlags(minor), kubectlPackage)
}

// requireKubernetes makes the throwaway module require k8s.io/kubernetes
// of kubeVersion, with each staging module it requires at v0.0.0 pointed at
// its published v0.x version, and returns the Kubernetes minor.
func (in *installer) requireKubernetes(ctx context.Context, b *build, modulePath string) (minor string, err error) {
	staging, minor, err := stagingVersion(in.kubeVersion)
	if err != nil {
		return "", err
	}
	b.phase("resolving modules...")
	if err := b.initModule(ctx, modulePath); err != nil {
		return "", err
	}
	mod := kubernetesModule + "@" + in.kubeVersion
	if err := b.goCmd(ctx, "mod", "edit", "-require="+mod); err != nil {
		return "", err
	}
	var dl struct{ GoMod, Error string }
	if err := b.goJSON(ctx, &dl, "mod", "download", "-json", mod); err != nil {
		return "", err
	}
	if dl.Error != "" {
		return "", fmt.Errorf("downloading %s: %s", mod, dl.Error)
	}
	var gomod modFile
	if err := b.goJSON(ctx, &gomod, "mod", "edit", "-json", dl.GoMod); err != nil {
		return "", err
	}
	edit := []string{"mod", "edit"}
	for _, m := range stagingModules(gomod) {
		edit = append(edit, "-replace="+m+"="+m+"@"+staging)
	}
	return minor, b.goCmd(ctx, edit...)
}

// versionFlags stamp kubeVersion into a Kubernetes binary, as its release
// build does.
func (in *installer) versionFlags(minor string) string {
	return strings.Join([]string{
		"-X " + componentBaseVers + ".gitVersion=" + in.kubeVersion,
		"-X " + componentBaseVers + ".gitMajor=1",
		"-X " + componentBaseVers + ".gitMinor=" + minor,
	}, " ")
}

// modFile is the part of `go mod edit -json` output we read.
type modFile struct {
	Require []struct{ Path, Version string }
}

// stagingModules lists the k8s.io modules that k8s.io/kubernetes requires at
// v0.0.0: its staging modules, which its own go.mod replaces with local paths.
func stagingModules(f modFile) []string {
	var mods []string
	for _, r := range f.Require {
		if r.Version == "v0.0.0" && strings.HasPrefix(r.Path, "k8s.io/") {
			mods = append(mods, r.Path)
		}
	}
	return mods
}

// stagingVersion maps a Kubernetes version v1.M.P to its staging modules'
// version v0.M.P and returns the minor M too.
func stagingVersion(kubeVersion string) (staging, minor string, err error) {
	rest, ok := strings.CutPrefix(kubeVersion, "v1.")
	minor, _, _ = strings.Cut(rest, ".")
	if !ok || minor == "" {
		return "", "", fmt.Errorf("kube-apiserver version %q is not of the form v1.M.P", kubeVersion)
	}
	return "v0." + rest, minor, nil
}

// reportsVersion says whether bin, run with args (--version, say), prints
// want as a line of its output.
func reportsVersion(ctx context.Context, bin, want string, args ...string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == want {
			return true
		}
	}
	return false
}

func (in *installer) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(in.progress, format+"\n", args...)
}
