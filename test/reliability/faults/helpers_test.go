package faults

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// Reasons the tests' handler decides with.
const (
	reasonGranted = "Granted"
	reasonOverCap = "OverCap"
)

// capped returns a handler that grants what is asked when the slice asks
// for at most maxCPU CPUs (any amount when maxCPU is zero), and denies it
// with reasonOverCap otherwise; it counts its calls in calls.
func capped(maxCPU int64, calls *atomic.Int64) handler.Func {
	return func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		calls.Add(1)
		if want, ok := expectedDecision(rs.Spec.Resources, maxCPU); !ok {
			rs.Status.Resources = nil
			conditions.Deny(rs, want, "asks more than the cap")
			return ctrl.Result{}, nil
		}
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, reasonGranted, "granted")
		return ctrl.Result{}, nil
	}
}

// callLog counts, per slice, handler calls that saw the same inputs as
// the slice's previous call: its UID, generation, labels, annotations and
// Authentication condition (the Liqo writer changes the condition's
// message on every rewrite). With no resync, no WithWatch pass and no
// tenant rule, such a repeat could only come from a failed or lost write
// making the SDK ask again for a decision it already had.
type callLog struct {
	mu      sync.Mutex
	last    map[types.NamespacedName]string
	repeats int
}

func newCallLog() *callLog { return &callLog{last: map[types.NamespacedName]string{}} }

// wrap records each call of h before making it.
func (l *callLog) wrap(h handler.Func) handler.Func {
	return func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		l.record(rs)
		return h(ctx, rs)
	}
}

func (l *callLog) record(rs *authv1beta1.ResourceSlice) {
	var auth string
	if c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeAuthentication); c != nil {
		auth = fmt.Sprintf("%s/%s/%s/%s", c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	// fmt prints maps with sorted keys.
	inputs := fmt.Sprintf("%s|%d|%v|%v|%s", rs.UID, rs.Generation, rs.Labels, rs.Annotations, auth)
	key := client.ObjectKeyFromObject(rs)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last[key] == inputs {
		l.repeats++
	}
	l.last[key] = inputs
}

// count is the number of repeated calls so far.
func (l *callLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.repeats
}

// expectedDecision is what capped decides for a request: its reason, and
// whether it is an acceptance.
func expectedDecision(asked corev1.ResourceList, maxCPU int64) (reason string, accepted bool) {
	if cpu := asked[corev1.ResourceCPU]; maxCPU > 0 && cpu.Cmp(*resource.NewQuantity(maxCPU, resource.DecimalSI)) > 0 {
		return reasonOverCap, false
	}
	return reasonGranted, true
}

// sliceSpec is a slice a test creates and what its class's handler decides.
type sliceSpec struct {
	ns, name, class string
	cpu             int
	// maxCPU is the class's cap (0: none).
	maxCPU int64
}

func (s sliceSpec) key() types.NamespacedName {
	return types.NamespacedName{Namespace: s.ns, Name: s.name}
}

// build returns the slice as Liqo leaves it once authenticated.
func (s sliceSpec) build() *authv1beta1.ResourceSlice {
	return slicetest.NewSlice(s.name, slicetest.WithNamespace(s.ns), slicetest.WithClass(s.class),
		slicetest.WithRequest(corev1.ResourceCPU, fmt.Sprint(s.cpu)))
}

// wrongDecision says how rs's decision differs from what its class's
// handler decides for it ("" when it is right, or rs is undecided).
func (s sliceSpec) wrongDecision(rs *authv1beta1.ResourceSlice) string {
	c := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeResources)
	if c == nil {
		return "undecided"
	}
	reason, accepted := expectedDecision(rs.Spec.Resources, s.maxCPU)
	wantStatus, wantResources := authv1beta1.ResourceSliceConditionDenied, corev1.ResourceList(nil)
	if accepted {
		wantStatus, wantResources = authv1beta1.ResourceSliceConditionAccepted, rs.Spec.Resources
	}
	switch {
	case c.Status != wantStatus || c.Reason != reason:
		return fmt.Sprintf("decided %s/%s, want %s/%s", c.Status, c.Reason, wantStatus, reason)
	case !equality.Semantic.DeepEqual(rs.Status.Resources, wantResources) && (len(rs.Status.Resources) > 0 || len(wantResources) > 0):
		return fmt.Sprintf("status.resources %v, want %v", rs.Status.Resources, wantResources)
	}
	return ""
}

// createAll creates the slices as Liqo does, with a few writers at once so
// that creating is faster than deciding, and calls created after each; it
// returns the first error.
func createAll(ctx context.Context, c client.Client, specs []sliceSpec, created func(sliceSpec)) error {
	const writers = 8
	todo := make(chan sliceSpec, len(specs))
	for _, s := range specs {
		todo <- s
	}
	close(todo)
	errs := make(chan error, writers)
	for range writers {
		go func() {
			for s := range todo {
				if err := slicetest.CreateAsLiqo(ctx, c, s.build()); err != nil {
					errs <- err
					return
				}
				created(s)
			}
			errs <- nil
		}()
	}
	var first error
	for range writers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// slicesOn reads the slices of specs' namespaces from the API server, by
// "namespace/name".
func slicesOn(ctx context.Context, c client.Reader, specs []sliceSpec) (map[string]*authv1beta1.ResourceSlice, error) {
	out := map[string]*authv1beta1.ResourceSlice{}
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s.ns] {
			continue
		}
		seen[s.ns] = true
		var list authv1beta1.ResourceSliceList
		if err := c.List(ctx, &list, client.InNamespace(s.ns)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			rs := &list.Items[i]
			out[rs.Namespace+"/"+rs.Name] = rs
		}
	}
	return out, nil
}

// undecided counts the slices of specs without a decision on the server.
func undecided(ctx context.Context, c client.Reader, specs []sliceSpec) (int, error) {
	got, err := slicesOn(ctx, c, specs)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range specs {
		if rs := got[s.key().String()]; rs == nil || !conditions.IsDecided(rs) {
			n++
		}
	}
	return n, nil
}

// poll checks every 100ms: a check lists hundreds of slices from the API
// server, whose load the suite measures.
var poll = testkit.Every(100 * time.Millisecond)

// waitDecided waits until every slice of specs has a decision on the
// server: hundreds of slices under injected faults, bulk work, so for up to
// three times the tests' one deadline.
func waitDecided(t *testing.T, c client.Reader, specs []sliceSpec) {
	t.Helper()
	left := len(specs)
	testkit.EventuallyScaled(t, poll, 3, fmt.Sprintf("every one of %d slices decided", len(specs)), func() bool {
		n, err := undecided(context.Background(), c, specs)
		if err == nil {
			left = n
		}
		return err == nil && n == 0
	})
	require.Zero(t, left)
}

// liqoMark is what the Liqo writer last wrote on a slice.
type liqoMark struct {
	message string
	time    metav1.Time
	crt     []byte
}

// liqoWriter plays Liqo's ResourceSlice controller: it keeps rewriting its
// own fields (the Authentication condition's message and time, and
// status.authParams) on random slices, with an Update of the whole status
// as Liqo does, and remembers what it last wrote on each.
type liqoWriter struct {
	c    client.Client
	rng  *rand.Rand
	base time.Time

	mu     sync.Mutex
	keys   []types.NamespacedName
	last   map[types.NamespacedName]liqoMark
	writes int
	// gaveUp counts rewrites that kept conflicting with the controller
	// past the retries; errs holds any other failure.
	gaveUp int
	errs   []error

	stopCh chan struct{}
	done   chan struct{}
}

// startLiqoWriter starts the writer; add gives it slices to rewrite, stop
// ends it.
func startLiqoWriter(t *testing.T, c client.Client, seed int64) *liqoWriter {
	w := &liqoWriter{
		c: c, rng: rand.New(rand.NewSource(seed)), base: time.Now().Truncate(time.Second),
		last: map[types.NamespacedName]liqoMark{}, stopCh: make(chan struct{}), done: make(chan struct{}),
	}
	go w.loop()
	t.Cleanup(w.stop)
	return w
}

// add makes a created slice a candidate for rewrites.
func (w *liqoWriter) add(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, key)
}

// stop ends the writer and waits for its last write.
func (w *liqoWriter) stop() {
	select {
	case <-w.stopCh:
	default:
		close(w.stopCh)
	}
	<-w.done
}

func (w *liqoWriter) loop() {
	defer close(w.done)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for round := 1; ; round++ {
		select {
		case <-w.stopCh:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		if len(w.keys) == 0 {
			w.mu.Unlock()
			continue
		}
		key := w.keys[w.rng.Intn(len(w.keys))]
		w.mu.Unlock()
		w.rewrite(key, round)
	}
}

// liqoBackoff retries a rewrite that conflicts with the controller's write.
var liqoBackoff = wait.Backoff{Steps: 20, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Cap: 200 * time.Millisecond}

func (w *liqoWriter) rewrite(key types.NamespacedName, round int) {
	mark := liqoMark{
		message: fmt.Sprintf("Liqo rewrite %d", round),
		time:    metav1.NewTime(w.base.Add(time.Duration(round) * time.Second)),
		crt:     fmt.Appendf(nil, "crt-%d", round),
	}
	err := retry.RetryOnConflict(liqoBackoff, func() error {
		var rs authv1beta1.ResourceSlice
		if err := w.c.Get(context.Background(), key, &rs); err != nil {
			return err
		}
		c := conditions.Get(&rs, authv1beta1.ResourceSliceConditionTypeAuthentication)
		if c == nil || rs.Status.AuthParams == nil {
			return fmt.Errorf("slice %s lost Liqo's fields: %+v", key, rs.Status)
		}
		c.Message, c.LastTransitionTime = mark.message, mark.time
		rs.Status.AuthParams.SignedCRT = mark.crt
		return w.c.Status().Update(context.Background(), &rs)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.writes++
		w.last[key] = mark
	case apierrors.IsConflict(err):
		w.gaveUp++
	default:
		w.errs = append(w.errs, err)
	}
}

// lost compares Liqo's fields on the server with what the writer last wrote
// (or, on slices it never rewrote, with what CreateAsLiqo wrote), and
// describes each difference.
func (w *liqoWriter) lost(got map[string]*authv1beta1.ResourceSlice, specs []sliceSpec) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range specs {
		rs := got[s.key().String()]
		initial := s.build()
		c, want := conditions.Get(rs, authv1beta1.ResourceSliceConditionTypeAuthentication), conditions.Get(initial, authv1beta1.ResourceSliceConditionTypeAuthentication)
		wantCRT := initial.Status.AuthParams.SignedCRT
		mark, rewritten := w.last[s.key()]
		if rewritten {
			want.Message, want.LastTransitionTime, wantCRT = mark.message, mark.time, mark.crt
		}
		switch {
		case rs == nil || c == nil || rs.Status.AuthParams == nil:
			out = append(out, s.key().String()+": Liqo's fields are gone")
		case c.Status != want.Status || c.Reason != want.Reason || c.Message != want.Message:
			out = append(out, fmt.Sprintf("%s: Authentication %s/%s %q, want %s/%s %q", s.key(), c.Status, c.Reason, c.Message, want.Status, want.Reason, want.Message))
		case rewritten && !c.LastTransitionTime.Equal(&want.LastTransitionTime):
			out = append(out, fmt.Sprintf("%s: Authentication time %s, want %s", s.key(), c.LastTransitionTime, want.LastTransitionTime))
		case !bytes.Equal(rs.Status.AuthParams.SignedCRT, wantCRT):
			out = append(out, fmt.Sprintf("%s: authParams.signedCRT %q, want %q", s.key(), rs.Status.AuthParams.SignedCRT, wantCRT))
		}
	}
	return out
}

// stats returns the writer's successful rewrites, rewrites given up after
// conflicts, and errors.
func (w *liqoWriter) stats() (writes, gaveUp int, errs []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.gaveUp, append([]error(nil), w.errs...)
}
