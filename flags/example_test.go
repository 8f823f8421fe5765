package flags_test

import (
	"flag"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sliceclass/sliceclass/flags"
)

// A main binds the standard flags in one call and parses: here the args
// the chart renders by default, but for the classes given by name.
func ExampleBind() {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	v := flags.Bind(fs)
	_ = fs.Parse([]string{
		"--class-name=gold", "--leader-elect", "--leader-election-namespace=liqo",
		"--class-lease-namespace=liqo", "--max-concurrent-reconciles=4", "--decision-events=all",
		"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
		"--zap-devel=false", "--zap-log-level=info",
	})
	opts := v.ManagerOptions(runtime.NewScheme())
	fmt.Println(v.ClassNames, opts.LeaderElectionID, opts.LeaderElectionNamespace, len(v.ClassDefaults()))
	// Output: [gold] sliceclass-gold liqo 3
}
