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

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// defaultKubeconfig is where the kubeconfig goes without -kubeconfig.
const defaultKubeconfig = "dev-controlplane.kubeconfig"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logger := zap.New(zap.WriteTo(os.Stderr), zap.ConsoleEncoder())
	ctrl.SetLogger(logger)
	err := run(ctx, os.Args[1:], os.Stdout, logger)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dev-controlplane: %v\n", err)
		os.Exit(1)
	}
}

// run parses args, starts a control plane, writes its kubeconfig, creates
// the consumers' tenant namespaces, starts Liqo's controllers (logging to
// logger), prints how to use it on out, and serves until ctx ends; it then
// stops the controllers and the control plane and removes the kubeconfig.
func run(ctx context.Context, args []string, out io.Writer, logger logr.Logger) (err error) {
	fs := flag.NewFlagSet("dev-controlplane", flag.ContinueOnError)
	fs.SetOutput(out)
	kubeconfig := fs.String("kubeconfig", defaultKubeconfig, "where to write the kubeconfig of the control plane's administrator")
	consumerList := fs.String("consumers", defaultConsumers, "consumers (cluster IDs, comma separated) given a tenant namespace liqo-tenant-<id> and an Active Tenant, as Liqo gives a peered consumer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	consumers, err := parseConsumers(*consumerList)
	if err != nil {
		return err
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
	l, namespaces, err := newLiqo(ctx, cp, consumers, logger)
	if err != nil {
		return err
	}
	liqoCtx, stopLiqo := context.WithCancel(ctx)
	controllers := l.start(liqoCtx)
	defer func() {
		stopLiqo()
		err = errors.Join(err, controllers.wait())
	}()
	if err := printUsage(out, cp.Config.Host, assets, path, consumers, namespaces); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-controllers.done:
		return errors.New("the controllers playing Liqo stopped") // the deferred wait adds why
	}
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
