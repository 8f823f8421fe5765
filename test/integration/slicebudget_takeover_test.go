package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/api/v1alpha1"
	"github.com/sliceclass/sliceclass/budget"
	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/resourceslice"
	"github.com/sliceclass/sliceclass/test/internal/testkit"
)

// A new leader writes only what it has counted. The first manager accepts
// 40 slices of 1 CPU; a second one takes over, its reads of the
// ResourceSlices slow (the first list answered after 4 s, as in a large
// cluster), so its status writer ticks several times before the feed has
// counted anything. An independent watch on the SliceBudget sees every
// status written from then on: used never falls below the 40 held, nor
// does accepted, and the new leader writes figures once it has counted
// (a 41st slice shows).
func TestSliceBudgetTakeoverWritesOnlyCounted(t *testing.T) {
	c := sbClient(t)
	const name, held = "sb-takeover", 40
	ns := testkit.Namespace(t, cp, name)
	createSliceBudget(t, c, name, v1alpha1.SliceBudgetSpec{Total: cpuList("100")})
	first, _ := objectClass(t, name, name)
	for i := range held {
		create(t, sliceIn(ns, fmt.Sprintf("s%02d", i), name))
	}
	testkit.Eventually(t, "status: 40 accepted, 40 CPU used", func() bool {
		st := sliceBudget(t, c, name).Status
		return st.Accepted == held && cpuIs(st.Used, "40")
	})
	seen := watchSliceBudget(t, name, sliceBudget(t, c, name).ResourceVersion)

	first.Stop()
	slow := rest.CopyConfig(cp.Config)
	slow.Wrap(slowSliceLists(time.Now().Add(4 * time.Second)))
	testkit.StartManagerWith(t, slow, testkit.ManagerOptions(t, sbScheme()), func(mgr manager.Manager) error {
		b, err := budget.FromObject(mgr, name)
		if err != nil {
			return err
		}
		return resourceslice.AddToManager(mgr, name, accept("Granted", nil), resourceslice.WithBudget(b), resourceslice.WithoutTenantRule())
	})
	create(t, sliceIn(ns, "late", name))
	testkit.Eventually(t, "the new leader accepts a 41st slice", func() bool { return conditions.IsAccepted(get(t, ns, "late")) })
	testkit.Eventually(t, "the new leader's status: 41 accepted, 41 CPU used", func() bool {
		st := sliceBudget(t, c, name).Status
		return st.Accepted == held+1 && cpuIs(st.Used, "41")
	})

	statuses := seen()
	require.NotEmpty(t, statuses, "the watch saw the new leader's writes")
	for _, st := range statuses {
		used := st.Used[corev1.ResourceCPU]
		assert.True(t, used.Cmp(resource.MustParse("40")) >= 0 && st.Accepted >= held,
			"a status written after the takeover shows less than the 40 CPU held by 40 accepted slices: used %s, accepted %d",
			used.String(), st.Accepted)
	}
	t.Logf("%d statuses written after the takeover", len(statuses))
}

// watchSliceBudget watches the SliceBudget name from resourceVersion rv
// until the test ends, and returns a function listing the statuses seen.
func watchSliceBudget(t *testing.T, name, rv string) func() []v1alpha1.SliceBudgetStatus {
	t.Helper()
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &v1alpha1.SliceBudgetList{}, &client.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name),
		Raw:           &metav1.ListOptions{ResourceVersion: rv},
	})
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []v1alpha1.SliceBudgetStatus
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if sb, ok := ev.Object.(*v1alpha1.SliceBudget); ok {
				mu.Lock()
				seen = append(seen, *sb.Status.DeepCopy())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return func() []v1alpha1.SliceBudgetStatus {
		mu.Lock()
		defer mu.Unlock()
		return append([]v1alpha1.SliceBudgetStatus(nil), seen...)
	}
}

// slowSliceLists holds every read of the ResourceSlice collection (a list,
// or a watch that starts with the initial list) until until: an informer
// then syncs no earlier.
func slowSliceLists(until time.Time) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/resourceslices") {
				if d := time.Until(until); d > 0 {
					select {
					case <-time.After(d):
					case <-req.Context().Done():
						return nil, req.Context().Err()
					}
				}
			}
			return rt.RoundTrip(req)
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
