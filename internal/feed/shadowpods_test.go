package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/ledger"
	"github.com/sliceclass/sliceclass/internal/testwait"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// aShadowPod is a ShadowPod as the API server sends it: the bench's
// realistic pod (two containers with env, mounts, requests and limits;
// volumes) created on envtest by a client and read back, managed fields
// included.
func aShadowPod(tb testing.TB) []byte {
	b, err := os.ReadFile("testdata/shadowpod.json")
	require.NoError(tb, err)
	return bytes.TrimSpace(b)
}

// liqoScheme knows Liqo's own ShadowPod type: the reference the narrow
// type is held to.
func liqoScheme(tb testing.TB) *runtime.Scheme {
	scheme := runtime.NewScheme()
	require.NoError(tb, offloadingv1beta1.AddToScheme(scheme))
	return scheme
}

// keptAsTheCacheKeepsIt decodes data as the ShadowPod cache does (the API
// machinery's decoder into the narrow type, then keepCharge).
func keptAsTheCacheKeepsIt(t *testing.T, data []byte) *shadowPodCharge {
	t.Helper()
	obj, _, err := serializer.NewCodecFactory(shadowPodScheme()).UniversalDeserializer().Decode(data, nil, nil)
	require.NoError(t, err)
	kept, err := keepCharge(obj)
	require.NoError(t, err)
	p, ok := kept.(*shadowPodCharge)
	require.True(t, ok, "the cache decodes a shadowPodCharge, not %T", kept)
	return p
}

// The narrow type decodes a ShadowPod, as the API server sends it, to what
// Liqo's own type decodes it to: the charge of its requests (containers
// summed, the largest init container's where larger, as Liqo's webhook
// charges), the creator user, the phase, and the identity eviction needs.
func TestShadowPodChargeDecodesAsLiqosType(t *testing.T) {
	var base offloadingv1beta1.ShadowPod
	require.NoError(t, json.Unmarshal(aShadowPod(t), &base))
	q := resource.MustParse
	cases := []struct {
		reason string
		change func(sp *offloadingv1beta1.ShadowPod)
	}{
		{reason: "the pod as the API server sent it", change: func(*offloadingv1beta1.ShadowPod) {}},
		{reason: "init containers, one larger than the containers' sum", change: func(sp *offloadingv1beta1.ShadowPod) {
			sp.Spec.Pod.InitContainers = []corev1.Container{
				{Name: "small", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1m")}}},
				{Name: "large", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceMemory: q("1Gi"), "nvidia.com/gpu": q("1")}}},
			}
		}},
		{reason: "a container with no requests, one with limits only", change: func(sp *offloadingv1beta1.ShadowPod) {
			sp.Spec.Pod.Containers[0].Resources = corev1.ResourceRequirements{}
			sp.Spec.Pod.Containers[1].Resources.Requests = nil
		}},
		{reason: "no creator label: charged to no Quota", change: func(sp *offloadingv1beta1.ShadowPod) {
			delete(sp.Labels, labelCreatorUser)
		}},
		{reason: "an ended pod", change: func(sp *offloadingv1beta1.ShadowPod) { sp.Status.Phase = corev1.PodSucceeded }},
		{reason: "no spec at all", change: func(sp *offloadingv1beta1.ShadowPod) { sp.Spec = offloadingv1beta1.ShadowPodSpec{} }},
	}
	liqo := serializer.NewCodecFactory(liqoScheme(t)).UniversalDeserializer()
	for _, tc := range cases {
		sp := base.DeepCopy()
		tc.change(sp)
		data, err := json.Marshal(sp)
		require.NoError(t, err)
		obj, _, err := liqo.Decode(data, nil, nil)
		require.NoError(t, err, tc.reason)
		full, ok := obj.(*offloadingv1beta1.ShadowPod)
		require.True(t, ok, "%s: Liqo's scheme decodes a %T", tc.reason, obj)

		got := keptAsTheCacheKeepsIt(t, data)
		want := &shadowPodCharge{
			chargeMeta: chargeMeta{ObjectMeta: metav1.ObjectMeta{Name: full.Name, Namespace: full.Namespace, UID: full.UID,
				ResourceVersion: full.ResourceVersion, CreationTimestamp: full.CreationTimestamp}},
			Status: chargeStatus{Phase: full.Status.Phase},
			User:   full.Labels[labelCreatorUser],
			Charge: ledger.PodCharge(&full.Spec.Pod),
		}
		assert.Empty(t, cmp.Diff(want, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(shadowPodCharge{}),
			cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })), "%s (-want +got)", tc.reason)
	}
	// The fixture's own figures, so that the comparison above compares
	// something.
	got := keptAsTheCacheKeepsIt(t, aShadowPod(t))
	assert.Equal(t, "liqo-cluster-cool-consumer", got.User)
	assert.Equal(t, corev1.PodRunning, got.Status.Phase)
	assert.Equal(t, "2m", got.Charge.Cpu().String())
	assert.Equal(t, "128Mi", got.Charge.Memory().String())
	assert.NotEmpty(t, got.UID)
	assert.False(t, got.CreationTimestamp.IsZero())
}

// keepCharge keeps only what the charge and eviction need, may run twice,
// and leaves other objects alone; a deep copy shares no map; a list
// decodes item by item.
func TestKeepCharge(t *testing.T) {
	p := keptAsTheCacheKeepsIt(t, aShadowPod(t))
	assert.Empty(t, p.Labels)
	assert.Empty(t, p.Annotations)
	assert.Empty(t, p.ManagedFields)
	assert.Empty(t, p.Spec.Pod.Containers)
	assert.Empty(t, p.Kind, "kept without its kind, as the manager's caches keep typed objects")

	again, err := keepCharge(p.DeepCopyObject())
	require.NoError(t, err)
	assert.Equal(t, p, again, "a pod kept already is left as it is")

	copied := p.DeepCopyObject().(*shadowPodCharge)
	copied.Charge[corev1.ResourceCPU] = resource.MustParse("9")
	assert.Equal(t, "2m", p.Charge.Cpu().String(), "a deep copy shares no map")

	var decoded shadowPodCharge
	require.NoError(t, json.Unmarshal(aShadowPod(t), &decoded))
	assert.Nil(t, decoded.ObjectMeta.ManagedFields, "managed fields are not decoded into entries")
	assert.True(t, json.Valid(decoded.ManagedFields) && len(decoded.ManagedFields) > 1000, "but kept as the JSON they came as, until keepCharge")
	undecoded := decoded.DeepCopyObject().(*shadowPodCharge)
	undecoded.Spec.Pod.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("9")
	assert.Equal(t, "1m", decoded.Spec.Pod.Containers[0].Resources.Requests.Cpu().String(), "nor does a copy of a pod not yet kept")

	other := &offloadingv1beta1.ShadowPod{}
	out, err := keepCharge(other)
	require.NoError(t, err)
	assert.Same(t, other, out)

	list := []byte(`{"kind":"ShadowPodList","apiVersion":"offloading.liqo.io/v1beta1","metadata":{"resourceVersion":"9"},"items":[` +
		string(aShadowPod(t)) + `,{"metadata":{"name":"q"},"status":{"phase":"Failed"}}]}`)
	obj, _, err := serializer.NewCodecFactory(shadowPodScheme()).UniversalDeserializer().Decode(list, nil, nil)
	require.NoError(t, err)
	items, ok := obj.(*shadowPodChargeList)
	require.True(t, ok, "a list decodes as shadowPodChargeList: %T", obj)
	assert.Equal(t, "9", items.ResourceVersion)
	require.Len(t, items.Items, 2)
	assert.Equal(t, "liqo-cluster-cool-consumer", items.Items[0].Labels[labelCreatorUser])
	assert.Equal(t, "q", items.Items[1].Name)
	assert.Equal(t, corev1.PodFailed, items.Items[1].Status.Phase)

	_, _, err = serializer.NewCodecFactory(shadowPodScheme()).UniversalDeserializer().Decode(
		[]byte(`{"kind":"ShadowPod","apiVersion":"offloading.liqo.io/v1beta1","spec":{"pod":{"containers":[{"resources":{"requests":{"cpu":"lots"}}}]}}}`), nil, nil)
	assert.Error(t, err, "a request that is no quantity is the decoder's error")
}

// The ShadowPod cache, as a manager builds it, on a real API server: it
// syncs (client-go's watch-list ends on a bookmark whose annotation the
// narrow type keeps), and the initial list, a watched creation, an update
// and a deletion each give what the charge needs.
func TestShadowPodCacheOnTheServer(t *testing.T) {
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := "decode-offloaded"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	pod := func(name, cpu string) *offloadingv1beta1.ShadowPod {
		return &offloadingv1beta1.ShadowPod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{labelCreatorUser: "user-s"}},
			Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
			}}}},
		}
	}
	require.NoError(t, cp.Client.Create(ctx, pod("listed", "2")))

	// The requests of ShadowPods the cache makes, to tell its watch-list
	// (the initial list as watch events, ending on a bookmark) from a list.
	var mu sync.Mutex
	var asked []string
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, "/shadowpods") {
				mu.Lock()
				asked = append(asked, req.URL.RawQuery)
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	mgr, err := manager.New(cfg, envkit.ManagerOptions(t, cp.Scheme))
	require.NoError(t, err)
	c, err := newShadowPodCache(mgr)
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()
	_, err = c.GetInformer(ctx, &shadowPodCharge{})
	require.NoError(t, err)
	syncCtx, stop := context.WithTimeout(ctx, testwait.Timeout)
	defer stop()
	require.True(t, c.WaitForCacheSync(syncCtx), "the ShadowPod cache syncs")
	mu.Lock()
	require.NotEmpty(t, asked)
	first := asked[0]
	mu.Unlock()
	assert.Contains(t, first, "sendInitialEvents=true", "the cache synced on a watch-list, whose end is a bookmark's annotation")

	watched := pod("watched", "3")
	require.NoError(t, cp.Client.Create(ctx, watched))
	charges := func() map[string]string {
		var list shadowPodChargeList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
		out := map[string]string{}
		for _, p := range list.Items {
			out[p.Name] = p.User + " " + p.Charge.Cpu().String() + " " + string(p.Status.Phase)
		}
		return out
	}
	require.Eventually(t, func() bool { return len(charges()) == 2 }, testwait.Timeout, 20*time.Millisecond, "the watch brings the second pod")
	assert.Equal(t, map[string]string{"listed": "user-s 2 ", "watched": "user-s 3 "}, charges())

	watched.Status.Phase = corev1.PodSucceeded
	require.NoError(t, cp.Client.Status().Update(ctx, watched))
	require.Eventually(t, func() bool { return charges()["watched"] == "user-s 3 Succeeded" }, testwait.Timeout, 20*time.Millisecond,
		"the watch brings the phase")
	var got shadowPodCharge
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(watched), &got))
	assert.Equal(t, watched.UID, got.UID)
	assert.Empty(t, got.ManagedFields, "kept as keepCharge keeps it")

	require.NoError(t, cp.Client.Delete(ctx, pod("listed", "2")))
	require.Eventually(t, func() bool { return len(charges()) == 1 }, testwait.Timeout, 20*time.Millisecond, "the watch takes the deleted pod out")
}

// BenchmarkShadowPodWatchEvent is what a ShadowPod watch event costs
// before the cache's handlers see it, through client-go's REST client as
// the cache's list-watch opens it (the JSON framer, the watch event's
// decoding, the object's): into the narrow type, then keepCharge (the
// ShadowPod cache), and into Liqo's own type (the baseline: a cache of the
// manager's). The stream is 256 ADDED events of the testdata pod, served
// from memory; cpu-ns/event is the process's CPU per event (see cpuTime).
func BenchmarkShadowPodWatchEvent(b *testing.B) {
	const n = 256
	ev, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: aShadowPod(b)}})
	require.NoError(b, err)
	stream := bytes.Repeat(append(ev, '\n'), n)
	for _, c := range []struct {
		name      string
		scheme    *runtime.Scheme
		transform func(any) (any, error)
	}{
		{"narrow", shadowPodScheme(), keepCharge},
		{"liqoTypeBaseline", liqoScheme(b), func(o any) (any, error) { return o, nil }},
	} {
		b.Run(c.name, func(b *testing.B) {
			rc, err := apiutil.RESTClientForGVK(offloadingv1beta1.SchemeGroupVersion.WithKind(shadowPodKind.Kind), false, false,
				&rest.Config{Host: "http://apiserver.invalid", QPS: -1}, serializer.NewCodecFactory(c.scheme),
				&http.Client{Transport: streamOf(stream)})
			require.NoError(b, err)
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				w, err := rc.Get().Resource("shadowpods").Param("watch", "true").Watch(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				for range n {
					e := <-w.ResultChan()
					if e.Type != watch.Added {
						b.Fatalf("event %s: %v", e.Type, e.Object)
					}
					if _, err := c.transform(e.Object); err != nil {
						b.Fatal(err)
					}
				}
				w.Stop()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N*n), "cpu-ns/event")
			b.ReportMetric(float64(len(stream)/n), "bytes/event")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system: on a
// machine other processes load, a benchmark's wall time counts their CPU
// too, its process's CPU time does not.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// roundTripFunc is a RoundTripper of a func.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// streamOf answers every request with stream, as a JSON watch.
type streamOf []byte

func (s streamOf) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Request: req,
		Header: http.Header{"Content-Type": []string{runtime.ContentTypeJSON}},
		Body:   io.NopCloser(bytes.NewReader(s)),
	}, nil
}
