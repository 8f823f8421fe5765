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
	componentBaseVers = "k8s.io/component-base/version"
)

// installer builds etcd and kube-apiserver into binDir, each in its own
// throwaway module under workDir.
type installer struct {
	binDir      string
	workDir     string
	etcdVersion string
	kubeVersion string
	progress    io.Writer
	start       time.Time
}

// install builds each binary that is missing or reports another version,
// then checks both.
func (in *installer) install(ctx context.Context) error {
	if err := os.MkdirAll(in.binDir, 0o755); err != nil {
		return err
	}
	etcd := filepath.Join(in.binDir, "etcd")
	etcdWant := "etcd Version: " + strings.TrimPrefix(in.etcdVersion, "v")
	apiserver := filepath.Join(in.binDir, "kube-apiserver")
	apiserverWant := "Kubernetes " + in.kubeVersion

	missing := !reportsVersion(ctx, etcd, etcdWant) || !reportsVersion(ctx, apiserver, apiserverWant)
	if missing {
		in.printf("envtest: building etcd %s and kube-apiserver %s from source into %s "+
			"(cold: about 10 minutes on an idle 2-core machine; the go tool's output goes to build.log under %s)",
			in.etcdVersion, in.kubeVersion, in.binDir, in.workDir)
	}
	if !reportsVersion(ctx, etcd, etcdWant) {
		if err := in.component(ctx, "etcd", in.etcdVersion, in.buildEtcd); err != nil {
			return err
		}
	}
	if !reportsVersion(ctx, apiserver, apiserverWant) {
		if err := in.component(ctx, "kube-apiserver", in.kubeVersion, in.buildAPIServer); err != nil {
			return err
		}
	}
	if !reportsVersion(ctx, etcd, etcdWant) {
		return fmt.Errorf("%s does not report %q", etcd, etcdWant)
	}
	if !reportsVersion(ctx, apiserver, apiserverWant) {
		return fmt.Errorf("%s does not report %q", apiserver, apiserverWant)
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

// buildAPIServer requires k8s.io/kubernetes, points each staging module it
// requires at v0.0.0 to its published v0.x version, and compiles
// cmd/kube-apiserver with the version stamped in.
func (in *installer) buildAPIServer(ctx context.Context, b *build) error {
	staging, minor, err := stagingVersion(in.kubeVersion)
	if err != nil {
		return err
	}
	b.phase("resolving modules...")
	if err := b.initModule(ctx, "envtest.local/kubeapiserver"); err != nil {
		return err
	}
	mod := kubernetesModule + "@" + in.kubeVersion
	if err := b.goCmd(ctx, "mod", "edit", "-require="+mod); err != nil {
		return err
	}
	var dl struct{ GoMod, Error string }
	if err := b.goJSON(ctx, &dl, "mod", "download", "-json", mod); err != nil {
		return err
	}
	if dl.Error != "" {
		return fmt.Errorf("downloading %s: %s", mod, dl.Error)
	}
	var gomod modFile
	if err := b.goJSON(ctx, &gomod, "mod", "edit", "-json", dl.GoMod); err != nil {
		return err
	}
	edit := []string{"mod", "edit"}
	for _, m := range stagingModules(gomod) {
		edit = append(edit, "-replace="+m+"="+m+"@"+staging)
	}
	if err := b.goCmd(ctx, edit...); err != nil {
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
	ldflags := strings.Join([]string{
		"-X " + componentBaseVers + ".gitVersion=" + in.kubeVersion,
		"-X " + componentBaseVers + ".gitMajor=1",
		"-X " + componentBaseVers + ".gitMinor=" + minor,
	}, " ")
	return b.compile(ctx, filepath.Join(in.binDir, "kube-apiserver"), ldflags, apiserverPackage)
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

// reportsVersion says whether bin runs and prints want as a line of its
// --version output.
func reportsVersion(ctx context.Context, bin, want string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
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
