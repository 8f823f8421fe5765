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

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// defaultKubeconfig is where the kubeconfig goes without -kubeconfig.
const defaultKubeconfig = "dev-controlplane.kubeconfig"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dev-controlplane: %v\n", err)
		os.Exit(1)
	}
}

// run parses args, starts a control plane, writes its kubeconfig, prints
// how to use it on out, and serves until ctx ends; it then stops the
// control plane and removes the kubeconfig.
func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("dev-controlplane", flag.ContinueOnError)
	fs.SetOutput(out)
	kubeconfig := fs.String("kubeconfig", defaultKubeconfig, "where to write the kubeconfig of the control plane's administrator")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	path, err := filepath.Abs(*kubeconfig)
	if err != nil {
		return err
	}
	if err := mayWrite(path); err != nil {
		return err
	}
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return err
	}
	cp, err := controlplane.New()
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, cp.Stop())
		if err == nil {
			_, err = fmt.Fprintln(out, "dev-controlplane: stopped")
		}
	}()
	if err := controlplane.WriteKubeconfig(cp.Config, path); err != nil {
		return err
	}
	defer func() {
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
	}()
	if err := printUsage(out, cp.Config.Host, assets, path); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// mayWrite refuses a path holding anything but a kubeconfig this command
// wrote (left by a run that was killed): it may be the user's own.
func mayWrite(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err == nil && len(kc.Contexts) == 1 && kc.Contexts[controlplane.KubeconfigContext] != nil {
		return nil
	}
	return fmt.Errorf("%s exists and is not a kubeconfig dev-controlplane wrote: choose another -kubeconfig", path)
}
