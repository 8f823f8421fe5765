// Command manager is a runnable class controller: it serves one or more
// ResourceSlice classes with the capped-resources policy.
//
//	manager --class-name gold --class-name silver --cap cpu=4,memory=8Gi,pods=110 --leader-elect
//
// or serves the classes a YAML file lists, following the file as it changes
// (a mounted ConfigMap, say) without a restart:
//
//	manager --classes-file /etc/sliceclass/classes.yaml --cap cpu=4 --leader-elect
//
// -h or --help prints every flag, including the zap logging flags
// (--zap-log-level, --zap-devel, ...), and exits 0. Bad flags print one line
// and exit with code 2; a missing kubeconfig prints one line and exits with
// code 1.
//
// The manager caches only what the SDK reads: ResourceSlices, trimmed with
// resourceslice.DropUnreadSliceFields, Tenants and namespaces' metadata, all without
// managed fields. A read of any other type fails instead of starting an
// informer; events are written, never read. Node pools of the classes file
// watch their nodes (and pods, with localPods) through trimmed caches of
// their own, which need list and watch on nodes (and pods): see
// deploy/rbac-nodepools.yaml. A class of the file that names a sliceBudget
// draws from a budget following that SliceBudget object (budget.FromObject),
// which needs the CRD (config/crd) and deploy/rbac-slicebudgets.yaml; a file
// that names none needs neither.
//
// The capped policy offers only the resources it has a cap for: --cap is
// required with --class-name, and with --classes-file for classes without
// caps of their own.
//
// Every served class records an event on each decision (--decision-events
// all, the SDK's default); --decision-events denied records denials only,
// and none records no decision event, saving the API write each costs at
// high decision rates (resourceslice.WithDecisionEvents).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/examples/grantrecords"
	"github.com/sliceclass/sliceclass/examples/manager/flags"
	sdkflags "github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// options holds the parsed flags (flags.Values, which examples/manager/flags
// binds) and what complete derives from them.
type options struct {
	flags.Values
	// caps is --cap, parsed.
	caps corev1.ResourceList
	// budget is shared by every served class; nil without --budget.
	budget *budget.Budget
}

// complete checks the parsed values and fills the fields derived from them.
func (o *options) complete() error {
	if err := o.Validate(); err != nil {
		return err
	}
	caps, err := cappedresources.ParseCaps(o.Cap)
	if err != nil {
		return fmt.Errorf("--cap: %w", err)
	}
	o.caps = caps
	if len(o.ClassNames) > 0 && len(caps) == 0 {
		return errors.New("--cap is required with --class-name: the capped policy offers only the resources it has a cap for")
	}
	if o.SharedBudget != "" {
		total, err := sdkflags.ParseResourceList(o.SharedBudget)
		if err != nil {
			return fmt.Errorf("--budget: %w", err)
		}
		if o.budget, err = budget.New("manager", total); err != nil {
			return fmt.Errorf("--budget: %w", err)
		}
	}
	return nil
}

// newFlagSet returns the manager's flag set (flags.NewFlagSet), bound to o.
func newFlagSet(o *options) *flag.FlagSet { return flags.NewFlagSet(&o.Values) }

// parseFlags parses args. On -h or --help it prints the usage to help and
// returns flag.ErrHelp; any other error is one line.
func parseFlags(args []string, help io.Writer) (options, error) {
	var o options
	fs := newFlagSet(&o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(help)
			fs.Usage()
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, o.complete()
}

// managerOptions returns the manager's options. Its scheme holds only the
// types the manager reads and writes through its client: Liqo's
// authentication types, with --class-lease-namespace coordination/v1
// (leader election and events use clients of their own), and with
// --classes-file core/v1, for the caches of node pools, and
// sliceclass.io/v1alpha1, for the SliceBudgets classes may name (in the
// scheme whether or not one is named, since the file may name one later;
// a manager whose file names none never reads them, and needs neither
// their CRD nor their RBAC). Its cache holds
// only what the controllers watch: ResourceSlices (trimmed by
// resourceslice.DropUnreadSliceFields), Tenants and namespaces' metadata (without
// managed fields). Reading any other type through the client fails
// with cache.ErrResourceNotCached instead of silently starting an informer
// for it.
func managerOptions(o options) (manager.Options, error) {
	// The scheme is the manager's, and the SDK never adds to it: this one
	// holds what this manager's options use, no more (a full one is
	// clientgoscheme.AddToScheme, authv1beta1.AddToScheme,
	// offloadingv1beta1.AddToScheme and v1alpha1.AddToScheme). Liqo's
	// slices and Tenants, and its Quotas, which a budget counts.
	scheme := runtime.NewScheme()
	if err := authv1beta1.AddToScheme(scheme); err != nil {
		return manager.Options{}, err
	}
	if err := offloadingv1beta1.AddToScheme(scheme); err != nil {
		return manager.Options{}, err
	}
	if o.ClassLeaseNamespace != "" {
		// Class Leases are written through the manager's client.
		if err := coordinationv1.AddToScheme(scheme); err != nil {
			return manager.Options{}, err
		}
	}
	if o.ClassesFile != "" || o.GrantRecordsNamespace != "" {
		// Node pools in the file watch nodes (and pods) through caches of
		// their own, built with the manager's scheme; the manager's own
		// cache still refuses to read them. Grant records are ConfigMaps.
		if err := corev1.AddToScheme(scheme); err != nil {
			return manager.Options{}, err
		}
	}
	if o.ClassesFile != "" {
		if err := v1alpha1.AddToScheme(scheme); err != nil {
			return manager.Options{}, err
		}
	}
	if o.GrantRecordsNamespace != "" {
		if err := schedulingv1.AddToScheme(scheme); err != nil {
			return manager.Options{}, err
		}
	}
	opts := o.ManagerOptions(scheme)
	opts.Cache = cache.Options{
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            cache.TransformStripManagedFields(),
	}
	resourceslice.DropUnreadSliceFields(&opts.Cache)
	return opts, nil
}

// newManager builds a manager serving o's classes.
func newManager(o options, cfg *rest.Config) (manager.Manager, error) {
	opts, err := managerOptions(o)
	if err != nil {
		return nil, err
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if o.ClassesFile != "" {
		// The flags' options are the set's defaults: every class of the
		// file, as it changes, is served with them.
		set, err := resourceslice.NewClassSet(mgr, o.ClassDefaults()...)
		if err != nil {
			return nil, err
		}
		// The SDK's builder, as flags.Values.ClassConfigs uses: one budget
		// per budget the file names, kept across reads while unchanged.
		f, err := newClassesFile(o.ClassesFile, set, o.caps, o.budget, o.GrantRecordsNamespace, sdkflags.NewClassBuilder(mgr), mgr.GetLogger())
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(f); err != nil {
			return nil, err
		}
	}
	if len(o.ClassNames) > 0 {
		policy, err := cappedresources.New(o.caps)
		if err != nil {
			return nil, err
		}
		classes, err := o.ClassConfigs(mgr) // each with the flags' options
		if err != nil {
			return nil, err
		}
		if err := addClasses(mgr, classes, policy, o.GrantRecordsNamespace, o.budget); err != nil {
			return nil, err
		}
	}
	if err := sdkflags.AddProbes(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}

// addClasses serves each --class-name with policy and its options
// (flags.Values.ClassConfigs), drawing from shared (--budget) when set
// and, with --grant-records-namespace, giving each accepted slice its
// grant record and PriorityClass.
func addClasses(mgr manager.Manager, classes []sdkflags.ClassConfig, policy *cappedresources.Policy, records string, shared *budget.Budget) error {
	for _, c := range classes {
		var h handler.Handler = policy
		opts := slices.Clone(c.Options)
		if shared != nil {
			opts = append(opts, resourceslice.WithBudget(shared))
		}
		if records != "" {
			var err error
			if h, err = grantRecords(c.Name, records, policy); err != nil {
				return err
			}
			opts = append(opts, grantRecordTypes())
		}
		if err := resourceslice.AddToManager(mgr, c.Name, h, opts...); err != nil {
			return err
		}
	}
	return nil
}

// grantRecords wraps policy for class so that each accepted slice owns a
// grant record in namespace and a PriorityClass (examples/grantrecords).
func grantRecords(class, namespace string, policy handler.Handler) (handler.Handler, error) {
	return grantrecords.New(grantrecords.WithClass(class), grantrecords.WithNamespace(namespace), grantrecords.WithHandler(policy))
}

// grantRecordTypes declares the types grantRecords owns.
func grantRecordTypes() resourceslice.Option {
	return resourceslice.WithOwnedTypes(&corev1.ConfigMap{}, &schedulingv1.PriorityClass{})
}

// run serves the classes until ctx ends.
func run(ctx context.Context, o options, cfg *rest.Config) error {
	mgr, err := newManager(o, cfg)
	if err != nil {
		return err
	}
	if o.ClassesFile != "" {
		ctrl.Log.Info("serving the classes of a file", "classesFile", o.ClassesFile, "defaultCaps", o.caps)
	} else {
		ctrl.Log.Info("serving classes", "classes", o.ClassNames, "caps", o.caps)
	}
	return mgr.Start(ctx)
}

// realMain is main without the exit: it returns the exit code, writes the
// help to stdout and errors to stderr, and serves until ctx ends.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		_, _ = fmt.Fprintln(stderr, "error:", err)
		return code
	}
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return fail(2, err)
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return fail(1, err)
	}
	ctrl.SetLogger(o.Logger(zap.WriteTo(stderr)))
	if err := run(ctx, o, cfg); err != nil {
		return fail(1, err)
	}
	return 0
}

func main() {
	os.Exit(realMain(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout, os.Stderr))
}
