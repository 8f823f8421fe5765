// Package cohorts is where the budgets one manager serves meet their
// cohort: one set of cohorts by name per manager (ledger.Cohorts) and
// the budgets it serves, kept by the SDK, so that budgets naming one cohort meet however their
// classes were registered (resourceslice.AddToManager per class, one or
// several ClassSets).
//
// It is package state on purpose (issue 50, "Cohorts meet in the
// manager"): the classes of one manager are registered by independent
// calls that share nothing else the SDK could hang the cohorts on, and
// the user is never asked to build or pass them. It is locked, keyed by
// the manager, and an entry goes when its manager stops: a runnable of
// the manager removes it. A manager built and never started keeps its
// entry until the process ends (as it keeps its own runnables).
package cohorts
