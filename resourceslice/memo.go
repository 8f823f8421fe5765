package resourceslice

import (
	"maps"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sliceclass/sliceclass/conditions"
)

// One handler call per decision. A write that fails, conflicts or whose
// answer is lost is retried by reconciling the slice again; when neither
// the slice's inputs nor the world the handler sees changed in between, the
// decision the handler already made is sent again instead of asking it
// twice. The inputs are the slice's UID, generation (spec), labels and
// annotations, its Authentication condition, its trusted consumer, the
// WithWatch pass epoch, and the owned status, which must still be what the
// decision started from (or what it wrote: an applied write whose answer
// was lost). A pass, a resync or any change of those calls the handler.

// decisionInputs is what a handler's decision depends on, besides the
// owned status.
type decisionInputs struct {
	uid         types.UID
	generation  int64
	labels      map[string]string
	annotations map[string]string
	auth        string
	consumer    string
	epoch       int
}

func (a decisionInputs) equal(b decisionInputs) bool {
	return a.uid == b.uid && a.generation == b.generation && a.auth == b.auth && a.consumer == b.consumer &&
		a.epoch == b.epoch && maps.Equal(a.labels, b.labels) && maps.Equal(a.annotations, b.annotations)
}

// decisionMemo is a handler's decision not yet written.
type decisionMemo struct {
	inputs decisionInputs
	// base is the owned status the decision started from; out is the
	// handler's output (owned fields only), before any budget's verdict.
	base, out *authv1beta1.ResourceSlice
	result    ctrl.Result
}

// memos keeps, per slice, the decision whose write did not go through.
type memos struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*decisionMemo
}

func newMemos() *memos { return &memos{m: map[types.NamespacedName]*decisionMemo{}} }

func (m *memos) put(key types.NamespacedName, d *decisionMemo) {
	m.mu.Lock()
	m.m[key] = d
	m.mu.Unlock()
}

// take returns key's memo if current still has its inputs and its base (or
// already shows its output), and forgets it either way.
func (m *memos) take(key types.NamespacedName, current *authv1beta1.ResourceSlice, in decisionInputs) *decisionMemo {
	m.mu.Lock()
	d := m.m[key]
	delete(m.m, key)
	m.mu.Unlock()
	if d == nil || !d.inputs.equal(in) || (!ownedEqual(current, d.base) && !ownedEqual(current, d.out)) {
		return nil
	}
	return d
}

func (m *memos) forget(key types.NamespacedName) {
	m.mu.Lock()
	delete(m.m, key)
	m.mu.Unlock()
}

// ownedCopy is a slice holding a deep copy of rs's owned status fields
// only.
func ownedCopy(rs *authv1beta1.ResourceSlice) *authv1beta1.ResourceSlice {
	out := &authv1beta1.ResourceSlice{}
	copyOwned(out, rs)
	return out.DeepCopy()
}

// inputsOf reads the decision inputs of rs.
func (r *classReconciler) inputsOf(rs *authv1beta1.ResourceSlice, consumer string) decisionInputs {
	in := decisionInputs{uid: rs.UID, generation: rs.Generation, labels: rs.Labels, annotations: rs.Annotations,
		consumer: consumer, epoch: r.retries.currentEpoch()}
	if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeAuthentication); c != nil {
		in.auth = string(c.Status) + "/" + c.Reason
	}
	return in
}
