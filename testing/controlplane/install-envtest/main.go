package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

const (
	// dirEnv names the environment variable that moves the cache root.
	// testing/controlplane reads the same variable when it looks for binaries.
	dirEnv = "SLICECLASS_ENVTEST_DIR"

	defaultEtcdVersion = "v3.6.8"
	defaultKubeVersion = "v1.35.3"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	dir, err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "install-envtest: %v\n", err)
		os.Exit(1)
	}
	if _, err := fmt.Fprintln(os.Stdout, dir); err != nil {
		os.Exit(1)
	}
}

// run parses args, builds whatever is missing and returns the directory
// holding etcd and kube-apiserver (and kubectl, with -kubectl). Progress goes to progress.
func run(ctx context.Context, args []string, progress io.Writer) (string, error) {
	fs := flag.NewFlagSet("install-envtest", flag.ContinueOnError)
	fs.SetOutput(progress)
	root := fs.String("dir", "", "root of the cache (default: $"+dirEnv+" or <user cache dir>/sliceclass/envtest)")
	etcdVersion := fs.String("etcd-version", defaultEtcdVersion, "etcd version to build")
	kubeVersion := fs.String("kube-version", defaultKubeVersion, "kube-apiserver version to build (v1.x.y)")
	kubectl := fs.Bool("kubectl", false, "also build kubectl of -kube-version beside them (for tests that run kubectl, on a machine without it)")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *root == "" {
		d, err := defaultRoot()
		if err != nil {
			return "", err
		}
		*root = d
	}
	in := &installer{
		binDir:      binDir(*root, *kubeVersion, *etcdVersion),
		workDir:     filepath.Join(*root, "src"),
		etcdVersion: *etcdVersion,
		kubeVersion: *kubeVersion,
		kubectl:     *kubectl,
		progress:    progress,
		start:       time.Now(),
	}
	if err := in.install(ctx); err != nil {
		return "", err
	}
	return in.binDir, nil
}

// defaultRoot is $SLICECLASS_ENVTEST_DIR, else sliceclass/envtest in the
// user's cache directory.
func defaultRoot() (string, error) {
	if d := os.Getenv(dirEnv); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory (set %s or -dir): %w", dirEnv, err)
	}
	return filepath.Join(cache, "sliceclass", "envtest"), nil
}

// binDir is where one pair of versions lands under root.
func binDir(root, kubeVersion, etcdVersion string) string {
	return filepath.Join(root, "k8s-"+kubeVersion+"-etcd-"+etcdVersion)
}
