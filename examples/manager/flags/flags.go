package flags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/sliceclass/sliceclass/resourceslice"
)

// Values holds the flags as given. Adding a flag takes a field here and one
// line in Bind.
type Values struct {
	// ClassNames are the --class-name values.
	ClassNames ClassList
	// ClassesFile is --classes-file: the classes to serve instead of
	// ClassNames, a YAML list of classes or {budgets, classes}.
	ClassesFile string
	// Cap is --cap, unparsed: the capped policy's caps, which are also the
	// only resources it offers.
	Cap string
	// SharedBudget is --budget, unparsed: one budget shared by the classes.
	SharedBudget string
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
	// LeaderElectionID is --leader-election-id; "" derives it.
	LeaderElectionID string
	// MaxConcurrentReconciles is --max-concurrent-reconciles.
	MaxConcurrentReconciles int
	// DecisionEvents is --decision-events (all, denied or none), for every
	// served class.
	DecisionEvents resourceslice.DecisionEvents
	// GrantRecordsNamespace is --grant-records-namespace: when set, every
	// served class (--class-name or --classes-file) owns, per accepted slice, a ConfigMap recording
	// the grant in this namespace and a PriorityClass for the consumer
	// (examples/grantrecords).
	GrantRecordsNamespace string
	// Kubeconfig is --kubeconfig.
	Kubeconfig string
	// Zap holds the --zap-* logging flags.
	Zap zap.Options
}

// ClassList is a repeatable, comma-separated --class-name flag.
type ClassList []string

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

// Bind registers every flag on fs, writing into v.
func (v *Values) Bind(fs *flag.FlagSet) {
	fs.Var(&v.ClassNames, "class-name", "ResourceSlice class to serve (repeatable, or comma separated); this or --classes-file is required")
	fs.StringVar(&v.ClassesFile, "classes-file", "", "YAML classes to serve, re-read when it changes; replaces --class-name: a list of {name, caps, budget | pool, consumerLimit, budgets}, or {budgets: [{name, total | pool, consumerLimit}], classes: [...]}")
	fs.StringVar(&v.Cap, "cap", "", "caps of the capped policy, which offers only the resources it caps, e.g. cpu=4,memory=8Gi,pods=110; required with --class-name (with --classes-file: for classes without caps)")
	fs.StringVar(&v.SharedBudget, "budget", "", "a budget shared by all served classes (with --classes-file: those without a budget), e.g. cpu=64,memory=256Gi (default: none)")
	fs.StringVar(&v.ClassLeaseNamespace, "class-lease-namespace", "", "hold a Lease sliceclass-class-<class> per served class in this namespace (default: none)")
	fs.StringVar(&v.MetricsBindAddress, "metrics-bind-address", ":8080", "metrics endpoint address; 0 disables it")
	fs.StringVar(&v.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "health probe address; 0 disables it")
	fs.BoolVar(&v.LeaderElect, "leader-elect", false, "enable leader election")
	fs.StringVar(&v.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's)")
	fs.StringVar(&v.LeaderElectionID, "leader-election-id", "", "name of the leader election lease (default: derived from --class-name, or sliceclass-classes-file)")
	fs.IntVar(&v.MaxConcurrentReconciles, "max-concurrent-reconciles", 1, "slices decided in parallel per class")
	v.DecisionEvents = resourceslice.DecisionEventsAll
	fs.Func("decision-events", "which decisions of every served class get an event: all, denied (denials only) or none; each event is an API write (default all)", func(s string) error {
		mode, err := parseDecisionEvents(s)
		if err == nil {
			v.DecisionEvents = mode
		}
		return err
	})
	fs.StringVar(&v.GrantRecordsNamespace, "grant-records-namespace", "", "give each accepted slice of every served class a ConfigMap recording its grant in this namespace and a PriorityClass (owned objects; needs RBAC on configmaps and priorityclasses) (default: none)")
	fs.StringVar(&v.Kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: KUBECONFIG, in-cluster config, ~/.kube/config)")
	v.Zap = zap.Options{Development: true}
	v.Zap.BindFlags(fs)
}

// parseDecisionEvents maps a --decision-events value to its mode.
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

// NewFlagSet returns the manager's flag set, bound to v. It prints nothing
// while parsing, so that the caller reports a bad flag in one line; its
// Usage prints the help to the set's output.
func NewFlagSet(v *Values) *flag.FlagSet {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage: %s --class-name NAME [flags]\n\n"+
			"Serves ResourceSlice classes with the capped-resources policy.\n\nFlags:\n", fs.Name())
		fs.PrintDefaults()
	}
	v.Bind(fs)
	return fs
}

// Parse parses args with NewFlagSet. It refuses positional arguments, which
// the manager takes none of. On -h or --help it returns flag.ErrHelp.
func Parse(args []string) (Values, error) {
	var v Values
	fs := NewFlagSet(&v)
	if err := fs.Parse(args); err != nil {
		return v, err
	}
	if fs.NArg() > 0 {
		return v, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return v, nil
}
