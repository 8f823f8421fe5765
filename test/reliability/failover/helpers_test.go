package failover

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

// grantAll accepts every slice with what it asks.
var grantAll = handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	grant(rs)
	return ctrl.Result{}, nil
})

// grant is grantAll's decision.
func grant(rs *authv1beta1.ResourceSlice) {
	rs.Status.Resources = rs.Spec.Resources.DeepCopy()
	conditions.Accept(rs, "Granted", "all requested resources granted")
}

// counting wraps h, counting its calls in n.
func counting(h handler.Handler, n *atomic.Int64) handler.Func {
	return func(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		n.Add(1)
		return h.Handle(ctx, rs)
	}
}

// oneCPU builds an undecided slice of class in ns asking one CPU, as Liqo
// leaves it once authenticated.
func oneCPU(ns, name, class string, opts ...slicetest.SliceOption) *authv1beta1.ResourceSlice {
	base := []slicetest.SliceOption{slicetest.WithNamespace(ns), slicetest.WithClass(class), slicetest.WithRequest(corev1.ResourceCPU, "1")}
	return slicetest.NewSlice(name, append(base, opts...)...)
}

// createAll creates the slices as Liqo does (slicetest.CreateAsLiqo, whose
// status write is a PUT, so status PATCHes are the controllers' only), with
// a few creators in parallel.
func createAll(t *testing.T, slices []*authv1beta1.ResourceSlice) {
	t.Helper()
	const creators = 8
	work := make(chan *authv1beta1.ResourceSlice)
	errs := make(chan error, creators)
	var wg sync.WaitGroup
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rs := range work {
				if err := slicetest.CreateAsLiqo(context.Background(), cp.Client, rs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	go func() {
		defer close(work)
		for _, rs := range slices {
			select {
			case work <- rs:
			case err := <-errs:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
}

// listSlices lists the slices of ns from the API server.
func listSlices(t *testing.T, ns string) []authv1beta1.ResourceSlice {
	t.Helper()
	var list authv1beta1.ResourceSliceList
	require.NoError(t, cp.Client.List(context.Background(), &list, client.InNamespace(ns)))
	return list.Items
}

// decidedCount reports how many slices of ns are decided, from the API
// server.
func decidedCount(t *testing.T, ns string) int {
	t.Helper()
	slices, n := listSlices(t, ns), 0
	for i := range slices {
		if conditions.IsDecided(&slices[i]) {
			n++
		}
	}
	return n
}

// leaseHolder returns the holder of the Lease ns/name, "" if there is none.
func leaseHolder(t *testing.T, ns, name string) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := cp.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
		require.NoError(t, client.IgnoreNotFound(err))
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// commitWatch is an observer independent of the replicas: it watches the
// namespace's slices on the API server and keeps, at every event, the CPU
// that Accepted slices hold, remembering the peak.
type commitWatch struct {
	mu      sync.Mutex
	granted map[string]int64 // milli-CPU held by each Accepted slice
	sum     int64
	peak    int64
	events  int
	err     error
}

// watchCommitted starts a commitWatch on ns until the test ends.
func watchCommitted(t *testing.T, ns string) *commitWatch {
	t.Helper()
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w := &commitWatch{granted: map[string]int64{}}
	wi, err := wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rv := ""
		for {
			for ev := range wi.ResultChan() {
				if rs, ok := ev.Object.(*authv1beta1.ResourceSlice); ok {
					rv = rs.ResourceVersion
					w.observe(ev.Type, rs)
				}
			}
			if ctx.Err() != nil {
				return
			}
			// The server ended the watch: resume where it stopped.
			wi, err = wc.Watch(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				w.mu.Lock()
				w.err = fmt.Errorf("resuming the watch at %s: %w", rv, err)
				w.mu.Unlock()
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

func (w *commitWatch) observe(typ watch.EventType, rs *authv1beta1.ResourceSlice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.sum -= w.granted[rs.Name]
	delete(w.granted, rs.Name)
	if typ != watch.Deleted && conditions.IsAccepted(rs) {
		w.granted[rs.Name] = rs.Status.Resources.Cpu().MilliValue()
		w.sum += w.granted[rs.Name]
	}
	w.peak = max(w.peak, w.sum)
}

// snapshot returns the CPU held now and at the peak (milli-CPU), the events
// seen and the watch's error.
func (w *commitWatch) snapshot() (now, peak int64, events int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sum, w.peak, w.events, w.err
}

// median of durations (the mean of the middle two for an even count).
func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
