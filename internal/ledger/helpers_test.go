package ledger_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// t0 is the creation time of the oldest slice in a test; later slices are
// t0 plus whole seconds, as the API server stamps them.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// cpu is a ResourceList with only cpu.
func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

// res is a ResourceList with cpu and memory.
func res(c, mem string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(c),
		corev1.ResourceMemory: resource.MustParse(mem),
	}
}

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

func uid(name string) types.UID { return types.UID("uid-" + name) }

func gold(name string) ledger.Holder { return ledger.Holder{Class: "gold", Key: key(name)} }

func silver(name string) ledger.Holder { return ledger.Holder{Class: "silver", Key: key(name)} }

// byValue compares quantities by value ("1" equals "1000m").
var byValue = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func assertList(t *testing.T, want, got corev1.ResourceList, what string) {
	t.Helper()
	assert.Empty(t, cmp.Diff(want, got, byValue), "%s (-want +got)", what)
}

// slice is an observation of slice name of class gold at rv: Accepted with
// grant when grant is not nil, not Accepted otherwise.
func slice(name, rv string, grant corev1.ResourceList, mods ...func(*ledger.Slice)) ledger.Slice {
	s := ledger.Slice{Key: key(name), UID: uid(name), RV: rv, Class: "gold", Accepted: grant != nil, Grant: grant}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func inClass(c string) func(*ledger.Slice) { return func(s *ledger.Slice) { s.Class = c } }

func withUID(u string) func(*ledger.Slice) { return func(s *ledger.Slice) { s.UID = types.UID(u) } }

func withLabels(kv ...string) func(*ledger.Slice) {
	return func(s *ledger.Slice) {
		s.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Labels[kv[i]] = kv[i+1]
		}
	}
}

// denied keeps the grant in status but reports the slice not Accepted, as
// a Deny after an acceptance leaves it.
func denied(s *ledger.Slice) { s.Accepted = false }

// reclaimed marks the slice Accepted with reason Reclaimed: shrunk for a
// reclaim.
func reclaimed(s *ledger.Slice) { s.Reclaimed = true }

// wakes records the slices a class's Wake callback received, in order.
type wakes struct {
	mu   sync.Mutex
	keys []string
}

func (w *wakes) wake(k types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, k.Name)
}

// take returns the wakes recorded since the last take.
func (w *wakes) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.keys
	w.keys = nil
	return out
}

// newLedger returns ledger "pool" over total with class "gold" attached
// (no selector), and what gold's Wake receives.
func newLedger(t testing.TB, total corev1.ResourceList) (*ledger.Ledger, *wakes) {
	t.Helper()
	l, err := ledger.New("pool", total)
	require.NoError(t, err)
	w := &wakes{}
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: w.wake}))
	return l, w
}

// hold makes slice name of gold observed at rv "1" holding grant.
func hold(l *ledger.Ledger, name string, grant corev1.ResourceList) {
	l.ObserveSlice(slice(name, "1", grant))
}

// wait has h ask for offer, expecting it not to fit: it joins the line.
func wait(t *testing.T, l *ledger.Ledger, h ledger.Holder, created time.Time, offer corev1.ResourceList) {
	t.Helper()
	a, msg := l.Admit(h, "1", created, offer)
	require.Nil(t, a, "%s asking %v should wait", h.Key.Name, offer)
	require.NotEmpty(t, msg)
}

// admit has h ask for offer, expecting it to fit.
func admit(t *testing.T, l *ledger.Ledger, h ledger.Holder, base string, created time.Time, offer corev1.ResourceList) *ledger.Attempt {
	t.Helper()
	a, msg := l.Admit(h, base, created, offer)
	require.NotNil(t, a, "%s asking %v should be admitted: %s", h.Key.Name, offer, msg)
	require.Empty(t, msg)
	return a
}

func names(hs []ledger.Holder) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Class+"/"+h.Key.Namespace+"/"+h.Key.Name)
	}
	return out
}

// consumer sets the slice's trusted consumer.
func consumer(c string) func(*ledger.Slice) { return func(s *ledger.Slice) { s.Consumer = c } }

// gpus is a ResourceList with only nvidia.com/gpu.
func gpus(q string) corev1.ResourceList {
	return corev1.ResourceList{resourceGPU: resource.MustParse(q)}
}

const resourceGPU corev1.ResourceName = "nvidia.com/gpu"

// newLedgerOpts is newLedger for a ledger called name with opts.
func newLedgerOpts(t testing.TB, name string, total corev1.ResourceList, opts ledger.Options) (*ledger.Ledger, *wakes) {
	t.Helper()
	l, err := ledger.New(name, total, opts)
	require.NoError(t, err)
	w := &wakes{}
	require.NoError(t, l.Attach("gold", ledger.Class{Wake: w.wake}))
	return l, w
}

// holdAs makes slice name of gold, consumer c, observed at rv "1" hold grant.
func holdAs(l *ledger.Ledger, name, c string, grant corev1.ResourceList) {
	l.ObserveSlice(slice(name, "1", grant, consumer(c)))
}

// request is gold's request for slice name of consumer c, decided at rv "1".
func request(name, c string, created time.Time, offer corev1.ResourceList) ledger.Request {
	return ledger.Request{Holder: gold(name), UID: uid(name), Base: "1", Created: created, Consumer: c, Offer: offer}
}

// refused has r ask the ledgers ls, expecting a refusal; it returns it.
func refused(t *testing.T, ls []*ledger.Ledger, r ledger.Request) *ledger.Refusal {
	t.Helper()
	as, refusal := ledger.AdmitAll(ls, r)
	require.Nil(t, as, "%s asking %v should wait", r.Key.Name, r.Offer)
	require.NotNil(t, refusal, "%s asking %v should wait", r.Key.Name, r.Offer)
	return refusal
}

// admitted has r ask the ledgers ls, expecting it to fit; it returns the
// attempts.
func admitted(t *testing.T, ls []*ledger.Ledger, r ledger.Request) []*ledger.Attempt {
	t.Helper()
	as, refusal := ledger.AdmitAll(ls, r)
	require.Nil(t, refusal, "%s asking %v should be admitted", r.Key.Name, r.Offer)
	require.Len(t, as, len(ls))
	return as
}
