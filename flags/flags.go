package flags

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/sliceclass/sliceclass/internal/classname"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// Values holds the standard flags as given, once Bind has bound them and
// the flag set is parsed. Adding a flag takes a field here and one line in
// Bind.
type Values struct {
	// ClassNames are the --class-name values.
	ClassNames ClassList
	// ClassesFile is --classes-file: a YAML file of the classes to serve
	// instead of ClassNames, each with its budgets and priority
	// (ClassesConfig; ClassConfigs reads it).
	ClassesFile string
	// ClassLeaseNamespace is --class-lease-namespace; "" for no class Lease.
	ClassLeaseNamespace string
	// MetricsBindAddress is --metrics-bind-address; "0" disables metrics.
	MetricsBindAddress string
	// HealthProbeBindAddress is --health-probe-bind-address; "0" disables it.
	HealthProbeBindAddress string
	// LeaderElect is --leader-elect.
	LeaderElect bool
	// LeaderElectionNamespace is --leader-election-namespace.
	LeaderElectionNamespace string
	// LeaderElectionID is --leader-election-id; "" derives it (see
	// LeaderElectionName).
	LeaderElectionID string
	// EnableWarmup is --enable-warmup (true unless given false; a Values
	// built without Bind has it false): with --leader-elect,
	// a standby starts its controllers' watches, and so fills its cache,
	// before it is elected (controller-runtime's EnableWarmup). It then
	// decides within a second of taking over instead of after listing
	// every slice (19 s at 50,000 slices), and holds as much memory as
	// the leader meanwhile. Without --leader-elect it changes nothing.
	EnableWarmup bool
	// MaxConcurrentReconciles is --max-concurrent-reconciles.
	MaxConcurrentReconciles int
	// DecisionEvents is --decision-events (all, denied or none), for every
	// served class.
	DecisionEvents resourceslice.DecisionEvents
	// Kubeconfig is --kubeconfig. When the flag set already had a
	// --kubeconfig (controller-runtime's, on flag.CommandLine), Bind leaves
	// it in place and RESTConfig reads it if Kubeconfig is "".
	Kubeconfig string
	// Zap holds the --zap-* logging flags.
	Zap zap.Options

	// kubeconfigFlag is a --kubeconfig defined before Bind, if any.
	kubeconfigFlag flag.Value
}

// kubeconfig is --kubeconfig, wherever it was defined.
func (v Values) kubeconfig() string {
	if v.Kubeconfig == "" && v.kubeconfigFlag != nil {
		return v.kubeconfigFlag.String()
	}
	return v.Kubeconfig
}

// ClassList is a repeatable, comma-separated --class-name flag.
type ClassList []string

var _ flag.Value = (*ClassList)(nil)

// String implements flag.Value.
func (c *ClassList) String() string { return strings.Join(*c, ",") }

// Set implements flag.Value: it appends each comma-separated name.
func (c *ClassList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*c = append(*c, s)
		}
	}
	return nil
}

// Bind registers every standard flag on fs and returns the Values they
// write into, with its defaults set: one call gives a main the standard
// flags, read once fs is parsed.
//
//	v := flags.Bind(flag.CommandLine)
//	flag.Parse()
//
// A command line of its own embeds *Values and binds its flags on the
// same set (examples/manager/flags).
func Bind(fs *flag.FlagSet) *Values {
	v := &Values{}
	fs.Var(&v.ClassNames, "class-name", "ResourceSlice class to serve (repeatable, or comma separated); this or --classes-file is required")
	fs.StringVar(&v.ClassesFile, "classes-file", "", "YAML file of the classes to serve, instead of --class-name: a list of {name, ...}, or {classes: [{name, ...}], ...}")
	fs.StringVar(&v.ClassLeaseNamespace, "class-lease-namespace", "", "hold a Lease sliceclass-class-<class> per served class in this namespace (default: none)")
	fs.StringVar(&v.MetricsBindAddress, "metrics-bind-address", ":8080", "metrics endpoint address; 0 disables it")
	fs.StringVar(&v.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "health probe address (/healthz, /readyz); 0 disables it")
	fs.BoolVar(&v.LeaderElect, "leader-elect", false, "enable leader election")
	fs.StringVar(&v.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's)")
	fs.StringVar(&v.LeaderElectionID, "leader-election-id", "", "name of the leader election lease (default: derived from --class-name, or sliceclass-classes-file)")
	fs.BoolVar(&v.EnableWarmup, "enable-warmup", true, "with --leader-elect, a standby starts its watches and fills its cache before it is elected (controller-runtime's EnableWarmup): it takes over without first listing every slice, and holds the leader's memory meanwhile; --enable-warmup=false for a cold standby")
	fs.IntVar(&v.MaxConcurrentReconciles, "max-concurrent-reconciles", 1, "slices decided in parallel per class")
	v.DecisionEvents = resourceslice.DecisionEventsAll
	fs.Func("decision-events", "which decisions of every served class get an event: all, denied (denials only) or none; each event is an API write (default all)", func(s string) error {
		mode, err := parseDecisionEvents(s)
		if err == nil {
			v.DecisionEvents = mode
		}
		return err
	})
	if f := fs.Lookup("kubeconfig"); f != nil {
		// controller-runtime defines --kubeconfig on flag.CommandLine when
		// its config package is linked in: share that flag rather than
		// panic on a second definition.
		v.kubeconfigFlag = f.Value
	} else {
		fs.StringVar(&v.Kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: KUBECONFIG, in-cluster config, ~/.kube/config)")
	}
	v.Zap = zap.Options{Development: true}
	v.Zap.BindFlags(fs)
	return v
}

// parseDecisionEvents maps a --decision-events value (all, denied, none)
// to its mode.
func parseDecisionEvents(s string) (resourceslice.DecisionEvents, error) {
	switch s {
	case "all":
		return resourceslice.DecisionEventsAll, nil
	case "denied":
		return resourceslice.DecisionEventsDenied, nil
	case "none":
		return resourceslice.DecisionEventsNone, nil
	}
	return 0, errors.New("want all, denied or none")
}

// Validate checks the values once parsed: one of --class-name and
// --classes-file, class names the SDK accepts, each once, and at least one
// worker per class.
func (v Values) Validate() error {
	switch {
	case len(v.ClassNames) == 0 && v.ClassesFile == "":
		return errors.New("at least one --class-name, or --classes-file, is required")
	case len(v.ClassNames) > 0 && v.ClassesFile != "":
		return errors.New("--class-name and --classes-file are exclusive: list the classes in the file")
	}
	seen := map[string]bool{}
	for _, c := range v.ClassNames {
		if err := classname.Validate(c); err != nil {
			return err
		}
		if seen[c] {
			return fmt.Errorf("class %q given twice", c)
		}
		seen[c] = true
	}
	if v.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", v.MaxConcurrentReconciles)
	}
	return nil
}

// ClassDefaults are the options every served class takes from the flags:
// --max-concurrent-reconciles, --decision-events and, when set,
// --class-lease-namespace. Append a class's own options to them.
func (v Values) ClassDefaults() []resourceslice.Option {
	opts := []resourceslice.Option{
		resourceslice.WithMaxConcurrentReconciles(max(v.MaxConcurrentReconciles, 1)),
		resourceslice.WithDecisionEvents(v.DecisionEvents),
	}
	if v.ClassLeaseNamespace != "" {
		opts = append(opts, resourceslice.WithClassLease(v.ClassLeaseNamespace))
	}
	return opts
}

// Logger is the logger the --zap-* flags describe, changed by opts (say
// zap.WriteTo). Set it as controller-runtime's with
// ctrl.SetLogger(v.Logger()) in main.
func (v Values) Logger(opts ...zap.Opts) logr.Logger {
	return zap.New(append([]zap.Opts{zap.UseFlagOptions(&v.Zap)}, opts...)...)
}
