package slicetest

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/internal/ledger"
)

// unsettledWrite is a status write whose answer did not say whether it was
// applied: the slice, and the resourceVersion the write was decided from.
type unsettledWrite struct {
	key  types.NamespacedName
	base string
}

// unsettledOutcome reports whether a status write that ended with err
// leaves the budgets unsure whether it was applied, as the reconciler
// judges it: any error but a conflict, a not-found or an invalid.
func unsettledOutcome(err error) bool {
	return err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err)
}

// patchBase reads the resourceVersion an optimistic-lock patch carries.
func patchBase(patch []byte) string {
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(patch, &p)
	return p.Metadata.ResourceVersion
}

func (h *Harness) noteUnsettled(key types.NamespacedName, patch []byte, err error) {
	if !unsettledOutcome(err) {
		return
	}
	if base := patchBase(patch); base != "" {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.unsettled = append(h.unsettled, unsettledWrite{key: key, base: base})
	}
}

// ReadBackUnansweredWrites settles, in budgets, every status write whose answer
// did not say whether the API server applied it (an error injected with
// WithStatusWriteErrors other than a conflict, a not-found or an invalid;
// AnswerLost's too), as production settles it once the server can no
// longer be applying it: it delivers the watch events first (a write the
// server applied shows as a newer version, which settles it), then reads
// each slice from the fake API server and, where it still shows the
// version the write was decided from, tells the budgets the write was not
// applied, so that its offer stops counting.
//
// In production the budget's feed makes that read at once when the server
// answered with an error (a 503, a 429), and after the server's request
// timeout (70s) when no answer came (a timeout, a cut connection), on its
// own goroutine. The harness holds those reads, so that a test's outcome
// does not depend on timing: until ReadBackUnansweredWrites, such a write's offer
// counts, as it does in production until the read. Pass the budgets of the
// classes that wrote; those of WithSliceBudget are always settled.
func (h *Harness) ReadBackUnansweredWrites(budgets ...*budget.Budget) {
	h.t.Helper()
	h.sync()
	h.mu.Lock()
	pending := h.unsettled
	h.unsettled = nil
	h.mu.Unlock()
	for _, b := range h.objectBudgets() {
		if !slices.Contains(budgets, b) {
			budgets = append(budgets, b)
		}
	}
	// Read as the server's request timeout has passed since each write.
	readAt := time.Now().Add(ledger.InFlightBound + time.Second)
	for _, w := range pending {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind))
		switch err := h.Client.Get(context.Background(), w.key, m); {
		case apierrors.IsNotFound(err):
			continue // the deletion's watch event ended all it held
		case err != nil:
			h.t.Fatalf("slicetest: reading %s to settle a lost answer: %v", w.key, err)
		case m.ResourceVersion != w.base:
			continue // the watch event of the newer version settled it
		}
		for _, b := range budgets {
			if l := ledger.Of(b); l != nil {
				l.SettleRead(w.key, w.base, readAt)
			}
		}
	}
	h.sync()
}

// heldSettles is the API reader of the harness's manager: it reads the fake
// API server, but holds the budget feed's settling reads (a list of
// ResourceSlice metadata) until the read's context ends. In production the
// feed settles a lost answer on its own goroutine, at a time the test does
// not control; the harness settles them at ReadBackUnansweredWrites instead, by
// the same rule, so that a test's outcome does not depend on timing.
type heldSettles struct{ client.Reader }

func (r heldSettles) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*metav1.PartialObjectMetadataList); ok && list.GetObjectKind().GroupVersionKind().Kind == authv1beta1.ResourceSliceKind+"List" {
		<-ctx.Done()
		return ctx.Err()
	}
	return r.Reader.List(ctx, list, opts...)
}
