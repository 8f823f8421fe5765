package slicetest

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

// SweepInventory runs, for New's class, the inventory sweep a manager runs
// once its cache has synced and at every resync period: when the handler is
// a handler.Inventory and a handler.Releaser, every key its Holding returns
// is marked as held and reconciled, which releases those whose slice is
// gone or no longer Accepted in the class. It returns what each of those
// reconciles did, in key order (nothing for other handlers and in a dry
// run), and fails the test when Holding fails.
func (h *Harness) SweepInventory() []Result {
	h.t.Helper()
	c := h.classes[0]
	keys, err := c.r.SweepInventory(context.Background())
	if err != nil {
		h.t.Fatalf("slicetest: inventory sweep: %v", err)
	}
	return h.reconcileKeys(c, keys)
}

// Reevaluate runs, for New's class, the re-evaluation pass a change of a
// WithWatch input starts: every slice the controller gave up on
// (WithMaxRetries) may be tried again, and every slice the class serves is
// reconciled, which writes only the decisions that change. It returns what
// each reconcile did, in key order.
func (h *Harness) Reevaluate() []Result {
	h.t.Helper()
	c := h.classes[0]
	keys, err := c.r.Pass(context.Background())
	if err != nil {
		h.t.Fatalf("slicetest: re-evaluation pass: %v", err)
	}
	return h.reconcileKeys(c, keys)
}

// reconcileKeys reconciles each key in c, in key order.
func (h *Harness) reconcileKeys(c *harnessClass, keys []types.NamespacedName) []Result {
	h.t.Helper()
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := make([]Result, 0, len(keys))
	for _, k := range keys {
		out = append(out, h.reconcile(c, k))
	}
	return out
}
