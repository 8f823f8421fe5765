// Package feed tells a budget's ledger what one manager's cluster shows:
// every ResourceSlice (through the manager's informer, or the status.class
// views where the API server keeps that field), every Liqo Quota owned by
// a slice, and what the consumers' running ShadowPods are charged (Pods: a
// narrow cache shared by the budgets of one set of classes). It also
// settles the writes whose answers were lost, with one read, and deletes
// the ShadowPods the ledger names when the budget evicts.
//
// A budget's parts (its feed and two runnables) hang off the budget: the
// first class that draws from it binds it to that class's manager
// (Acquire), and the last one to let go (Release) tears them down. The
// feed runs on the leader; reconcilers admit nothing before it has
// delivered the initial lists (Feed.WaitForSync).
package feed
