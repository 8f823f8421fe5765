// Package flags is the command line every manager built with the SDK
// shares: the classes to serve (--class-name, --classes-file), metrics and
// health probes, leader election, decision events, class Leases, the
// kubeconfig and zap's logging flags. The Helm chart
// (charts/sliceclass-manager) renders these flags, so a manager whose main
// binds them takes the chart's args unchanged:
//
//	func main() {
//		v := flags.Bind(flag.CommandLine)
//		flag.Parse()
//		ctrl.SetLogger(v.Logger())
//		cfg, err := v.RESTConfig() // --kubeconfig, else KUBECONFIG, in-cluster, ~/.kube/config
//		if err != nil { ... }
//		mgr, err := ctrl.NewManager(cfg, v.ManagerOptions(scheme)) // metrics, probes, leader election
//		if err != nil { ... }
//		err = flags.AddProbes(mgr) // /healthz, and /readyz once the cache synced
//		if err != nil { ... }
//		classes, err := v.ClassConfigs(mgr) // checks the flags; --class-name, or each class of --classes-file, whole
//		if err != nil { ... }
//		set, err := resourceslice.NewClassSet(mgr)
//		if err != nil { ... }
//		for _, c := range classes {
//			err := set.Serve(c.Name, myPolicy, c.Options...) // the flags', then the file's: budgets, priority
//			...
//		}
//		err = mgr.Start(ctrl.SetupSignalHandler())
//	}
//
// ClassConfigs reads the file with ParseClassesConfig, the one parser of
// the classes file (the example manager's too), and builds its budgets
// with a ClassBuilder: one *budget.Budget per budget, however many classes
// draw from it. A class naming a sliceBudget takes every budget rule from
// the SliceBudget object; the file refuses the same rule beside it.
//
// With --leader-elect, standbys are warm unless --enable-warmup=false:
// ManagerOptions sets controller-runtime's EnableWarmup, so a standby fills
// its cache before it is elected and decides within a second of taking
// over, holding as much memory as the leader meanwhile; and a leader that
// stops cleanly releases its lease, so that a standby takes over at once.
//
// ClassConfigs reads --classes-file once: the chart rolls the pods when the
// file changes. A manager that follows the file while it runs (as
// examples/manager does, with resourceslice.ClassSet) re-reads it and
// builds again with the ClassBuilder it holds.
//
// A manager that needs flags of its own binds them on the same flag set;
// examples/manager/flags embeds *Values, set by Bind, and adds the capped
// policy's.
//
// The package only reads flags and the classes file, and builds options
// and the file's budgets (on the manager it is given): it sets no global
// (not even controller-runtime's logger) and registers nothing on import.
package flags
