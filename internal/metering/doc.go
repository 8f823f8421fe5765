// Package metering measures what each consumer held in each budget, over
// time, in the numbers a provider bills from.
//
// A Meter is told by the budgets' ledgers (as ledger.Meter, through one
// Source per budget) what each consumer's slices hold and what its running
// ShadowPods are charged, each time either changes, and exports per budget,
// consumer and resource:
//
//	sliceclass_consumer_granted                gauge    what its slices hold now (the larger of grant and Quota, as the books count it)
//	sliceclass_consumer_in_use                 gauge    what its running ShadowPods are charged now
//	sliceclass_consumer_granted_seconds_total  counter  the first, integrated over time
//	sliceclass_consumer_in_use_seconds_total   counter  the second, integrated over time
//
// The counters are in the resource's base unit times seconds (cpu:
// core-seconds; memory: byte-seconds). They advance from the books' own
// changes, not from a sampling timer: each change closes the interval the
// previous value held, at the moment the change was observed, and a scrape
// adds the open interval up to its own moment without changing anything.
// So a grant held for 300 ms between two scrapes is counted, to the
// millisecond it was observed.
//
// Only a leader meters: the counters advance, and the collector exports
// series, only while a manager that registered a leader runnable (Leader)
// is elected. A standby exports nothing, so sums over replicas are right.
// Counters start at zero in each process (Prometheus' convention for a
// restart); increase() and rate() treat the drop as a reset.
//
// A consumer's series go Linger after it last held and used nothing, so
// that the final value of its counters is scraped many times (Prometheus
// marks a series stale after five minutes without samples) and increase()
// over any range that covers its last use sees all of it; a consumer that
// holds something again within Linger keeps its series and its counters.
// Consumers are the tenants' IDs the books key on (a namespace's trusted
// consumer, never what a consumer writes), so the series are bounded by
// the provider's tenants times budgets times limited resources.
//
// Metering is compiled out with the build tag sliceclass_nometering
// (Enabled is then false and nothing is registered or told), for a
// baseline without it.
package metering
