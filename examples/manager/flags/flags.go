package flags

import (
	"flag"
	"fmt"
	"io"

	sdkflags "github.com/sliceclass/sliceclass/flags"
)

// Values holds the flags as given: the SDK's standard flags
// (github.com/sliceclass/sliceclass/flags, bound by sdkflags.Bind), which
// the chart renders for any manager, and the example manager's own. Adding
// a flag of its own takes a field here and one line in Bind. Read it once
// Bind has bound it (NewFlagSet, Parse): before, the standard flags' Values
// is nil.
type Values struct {
	*sdkflags.Values
	// Cap is --cap, unparsed: the capped policy's caps, which are also the
	// only resources it offers.
	Cap string
	// SharedBudget is --budget, unparsed: one budget shared by the classes.
	SharedBudget string
	// GrantRecordsNamespace is --grant-records-namespace: when set, every
	// served class (--class-name or --classes-file) owns, per accepted slice, a ConfigMap recording
	// the grant in this namespace and a PriorityClass for the consumer
	// (examples/grantrecords).
	GrantRecordsNamespace string
}

// ClassList is the SDK's repeatable, comma-separated --class-name flag.
type ClassList = sdkflags.ClassList

// Bind registers every flag on fs, writing into v: the standard ones
// (sdkflags.Bind), and the example's.
func (v *Values) Bind(fs *flag.FlagSet) {
	v.Values = sdkflags.Bind(fs)
	fs.StringVar(&v.Cap, "cap", "", "caps of the capped policy, which offers only the resources it caps, e.g. cpu=4,memory=8Gi,pods=110; required with --class-name (with --classes-file: for classes without caps)")
	fs.StringVar(&v.SharedBudget, "budget", "", "a budget shared by all served classes (with --classes-file: those without a budget), e.g. cpu=64,memory=256Gi (default: none)")
	fs.StringVar(&v.GrantRecordsNamespace, "grant-records-namespace", "", "give each accepted slice of every served class a ConfigMap recording its grant in this namespace and a PriorityClass (owned objects; needs RBAC on configmaps and priorityclasses) (default: none)")
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
