package budget

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// The consumer limits in force, as on call reads them: a SliceBudget's
// status.consumerLimits, and the log line for a limit naming a consumer the
// budget counts no slice of.

// limitsInForce is status.consumerLimits: each consumer's own limit in
// force (limits, the ledger's, by consumer), in name order, and whether the
// budget counts a slice of the consumer (snap.Consumers: holding or
// waiting). Until the books are counted, known is as shown (a new leader
// knows no slice yet), or true for an entry not shown before.
func limitsInForce(limits map[string]corev1.ResourceList, snap ledger.Snapshot, shown []v1alpha1.ConsumerLimitStatus) []v1alpha1.ConsumerLimitStatus {
	if len(limits) == 0 {
		return nil
	}
	counted := make(map[string]bool, len(snap.Consumers))
	for _, c := range snap.Consumers {
		counted[c.Name] = true
	}
	before := make(map[string]bool, len(shown))
	for _, c := range shown {
		before[c.Consumer] = c.Known
	}
	out := make([]v1alpha1.ConsumerLimitStatus, 0, len(limits))
	for _, c := range slices.Sorted(maps.Keys(limits)) {
		known := counted[c]
		if !snap.Counted {
			k, ok := before[c]
			known = k || !ok
		}
		out = append(out, v1alpha1.ConsumerLimitStatus{Consumer: c, Limits: limits[c], Known: known})
	}
	return out
}

// logUnknownConsumers logs, as Budget.SetConsumerLimit does, each override
// of a SliceBudget's spec.consumerLimits whose consumer the budget counts no
// slice of: valid and kept (it applies when one appears), but a mistyped ID
// limits nobody, so the line and status.consumerLimits (known false) make it
// findable. Before the books count the cluster (a manager starting, a
// standby) it logs nothing, since it knows no slice of anyone yet; the
// status says known false once they do.
func logUnknownConsumers(ctx context.Context, budget string, snap ledger.Snapshot, overrides map[string]corev1.ResourceList) {
	if !snap.Counted {
		return
	}
	counted := make(map[string]bool, len(snap.Consumers))
	for _, c := range snap.Consumers {
		counted[c.Name] = true
	}
	for _, c := range slices.Sorted(maps.Keys(overrides)) {
		if len(overrides[c]) == 0 || counted[c] {
			continue
		}
		log.FromContext(ctx).Info("consumer limit set for a consumer the budget knows no slice of: kept, it applies when one appears (if one was expected, check the consumer ID)",
			"budget", budget, "consumer", c, "limit", ledger.Amounts(overrides[c]))
	}
}
