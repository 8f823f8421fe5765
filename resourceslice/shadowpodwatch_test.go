package resourceslice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/testing/controlplane"
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

// aWatchStream is n ADDED events as the API server writes a JSON watch.
func aWatchStream(tb testing.TB, n int) []byte {
	ev, err := json.Marshal(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: aShadowPod(tb)}})
	require.NoError(tb, err)
	return bytes.Repeat(append(ev, '\n'), n)
}

// BenchmarkShadowPodWatchEvent is what a ShadowPod watch event costs
// before the cache's handlers see it, framed and decoded: by client-go
// with a scheme that knows Liqo's ShadowPod (the baseline: a cache of the
// manager's), and by the SDK's ShadowPod client.
func BenchmarkShadowPodWatchEvent(b *testing.B) {
	const n = 256
	stream := aWatchStream(b, n)
	scheme := runtime.NewScheme()
	require.NoError(b, offloadingv1beta1.AddToScheme(scheme))
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme)
	clientGo, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(b, ok)
	sdk := chargeCodec{}.SupportedMediaTypes()[0]
	for _, c := range []struct {
		name string
		info runtime.SerializerInfo
		obj  runtime.Decoder
	}{
		{"client-go", clientGo, codecs.UniversalDeserializer()},
		{"sdk", sdk, chargeDecoder{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				fr := c.info.StreamSerializer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
				d := streaming.NewDecoder(fr, c.info.StreamSerializer)
				for range n {
					var ev metav1.WatchEvent
					if _, _, err := d.Decode(nil, &ev); err != nil {
						b.Fatal(err)
					}
					if _, err := runtime.Decode(c.obj, ev.Object.Raw); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			b.ReportMetric(float64(len(stream)/n), "bytes/event")
		})
	}
}

// chunks reads data n bytes at a time.
type chunks struct {
	data []byte
	n    int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[k:]
	return k, nil
}

// readFrames reads every frame of stream through objectFramer, the stream
// coming chunk bytes at a time and each Read given a buffer of size buf.
func readFrames(stream []byte, chunk, buf int) ([]string, error) {
	fr := objectFramer{}.NewFrameReader(io.NopCloser(&chunks{data: stream, n: chunk}))
	var frames []string
	var frame []byte
	p := make([]byte, buf)
	for {
		n, err := fr.Read(p)
		frame = append(frame, p[:n]...)
		switch {
		case errors.Is(err, io.ErrShortBuffer):
			continue
		case err == nil:
			frames = append(frames, string(frame))
			frame = nil
			continue
		}
		return frames, err
	}
}

// objectFramer hands out the frames the JSON framer hands out, whatever
// pieces the stream comes in and whatever the reader's buffer.
func TestObjectFramerFramesAsTheJSONFramer(t *testing.T) {
	stream := append([]byte(" \n"), aWatchStream(t, 3)...)
	stream = append(stream, `{"type":"ADDED","object":{"a":"}]\"{\\","b":[{},[]],"c":"\\\""}}`+"\r\n\t"+`{}{"x":{"y":"\u007d"}}`+"\n\n"...)
	var want []string
	jf := jsonserializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	for {
		p := make([]byte, len(stream))
		n, err := jf.Read(p)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		want = append(want, string(p[:n]))
	}
	require.Len(t, want, 6)
	for _, chunk := range []int{1, 2, 3, 7, 64, 4096, len(stream)} {
		for _, buf := range []int{1, 5, 512, 1 << 16} {
			got, err := readFrames(stream, chunk, buf)
			require.ErrorIs(t, err, io.EOF, "chunk %d, buffer %d", chunk, buf)
			assert.Equal(t, want, got, "chunk %d, buffer %d", chunk, buf)
		}
	}

	got, err := readFrames([]byte(`{"a":1} {"b":[`), 3, 16)
	assert.Equal(t, []string{`{"a":1}`}, got)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "a stream cut in an object")
	got, err = readFrames([]byte(`{"a":1} [1]`), 3, 16)
	assert.Equal(t, []string{`{"a":1}`}, got)
	assert.ErrorIs(t, err, errNotAnObject)
	got, err = readFrames(nil, 3, 16)
	assert.Empty(t, got)
	assert.ErrorIs(t, err, io.EOF)
}

// FuzzObjectFramer: the frames do not depend on the pieces the stream
// comes in, and each is one object by objectLen's count.
func FuzzObjectFramer(f *testing.F) {
	f.Add([]byte(`{"a":"}\"{\\"} {"b":[{}]}`), uint8(1))
	f.Add([]byte(`{"type":"ADDED","object":{"k":"\\\\\""}}`+"\n"), uint8(2))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		whole, wholeErr := readFrames(stream, len(stream)+1, len(stream)+1)
		pieces, piecesErr := readFrames(stream, int(chunk)+1, 7)
		assert.Equal(t, whole, pieces)
		assert.Equal(t, wholeErr, piecesErr)
		for _, frame := range whole {
			assert.Equal(t, len(frame), objectLen([]byte(frame)), "%q", frame)
		}
	})
}

// The ShadowPod cache's decoding on a real API server: the initial list
// and a watch event each give what the charge needs.
func TestShadowPodCacheDecodesWhatTheServerSends(t *testing.T) {
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const ns = "decode-offloaded"
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
	hc, err := rest.HTTPClientFor(cp.Config)
	require.NoError(t, err)
	newInformer, err := shadowPodInformer(cp.Config, hc)
	require.NoError(t, err)
	c, err := cache.New(cp.Config, cache.Options{Scheme: shadowPodScheme(), HTTPClient: hc, NewInformer: newInformer})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()
	_, err = c.GetInformer(ctx, &shadowPodCharge{})
	require.NoError(t, err)
	require.True(t, c.WaitForCacheSync(ctx), "the ShadowPod cache syncs")
	require.NoError(t, cp.Client.Create(ctx, pod("watched", "3")))
	charges := func() map[string]string {
		var list shadowPodChargeList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
		out := map[string]string{}
		for _, p := range list.Items {
			out[p.Name] = p.User + " " + p.Charge.Cpu().String()
		}
		return out
	}
	require.Eventually(t, func() bool { return len(charges()) == 2 }, 10*time.Second, 20*time.Millisecond, "the watch brings the second pod")
	assert.Equal(t, map[string]string{"listed": "user-s 2", "watched": "user-s 3"}, charges())
	require.NoError(t, cp.Client.Delete(ctx, pod("listed", "2")))
	require.Eventually(t, func() bool { return len(charges()) == 1 }, 10*time.Second, 20*time.Millisecond, "the watch takes the deleted pod out")

	// The list a reflector falls back to, and an error answer, through the
	// same client.
	rc, err := chargeClient(cp.Config, hc)
	require.NoError(t, err)
	got, err := chargeListWatch(rc).ListWithContext(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	list := got.(*shadowPodChargeList)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "watched", list.Items[0].Name)
	assert.Equal(t, "3", list.Items[0].Charge.Cpu().String())
	assert.NotEmpty(t, list.ResourceVersion)
	_, err = chargeListWatch(rc).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "not-a-version"})
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status, "a refused watch is the server's Status, decoded")
	assert.Equal(t, metav1.StatusFailure, status.Status().Status)
}

// chargeDecoder decodes each answer into what it is read into; an ERROR
// event's object is the server's Status, not a ShadowPod.
func TestChargeDecoder(t *testing.T) {
	const pod = `{"apiVersion":"offloading.liqo.io/v1beta1","kind":"ShadowPod","metadata":{"name":"p","namespace":"n","uid":"u","resourceVersion":"7",` +
		`"labels":{"liqo.io/creator-user":"user-s"},"managedFields":[{"manager":"m"}]},` +
		`"spec":{"pod":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}},{"name":"b","resources":{"requests":{"cpu":"500m"}}}],` +
		`"initContainers":[{"name":"i","resources":{"requests":{"cpu":"2"}}}]}},"status":{"phase":"Running"}}`
	var d chargeDecoder

	var ev metav1.WatchEvent
	frame := []byte(`{"type":"ADDED","object":` + pod + "}\n")
	got, _, err := d.Decode(frame, nil, &ev)
	require.NoError(t, err)
	require.Same(t, &ev, got)
	assert.Equal(t, "ADDED", ev.Type)
	assert.JSONEq(t, pod, string(ev.Object.Raw))
	frame[len(frame)-10] = 'X' // the streaming decoder reuses its buffer
	assert.JSONEq(t, pod, string(ev.Object.Raw), "the event keeps a copy of its object")
	for _, other := range []string{
		`{"object":` + pod + `,"type":"MODIFIED"}`,      // another field order
		`{ "type": "MODIFIED", "object": ` + pod + ` }`, // spaces
		`{"type":"MODIFIED","object":` + pod + `,"extra":{}}`,
	} {
		var ev metav1.WatchEvent
		_, _, err := d.Decode([]byte(other), nil, &ev)
		require.NoError(t, err, other)
		assert.Equal(t, "MODIFIED", ev.Type, other)
		assert.JSONEq(t, pod, string(ev.Object.Raw), other)
	}

	obj, err := runtime.Decode(d, ev.Object.Raw)
	require.NoError(t, err)
	p, ok := obj.(*shadowPodCharge)
	require.True(t, ok, "a ShadowPod, got %T", obj)
	assert.Equal(t, "user-s", p.User)
	assert.Equal(t, corev1.PodRunning, p.Phase)
	assert.Equal(t, "2", p.Charge.Cpu().String(), "the largest init container's request, as Liqo charges it")
	assert.Equal(t, "7", p.ResourceVersion)
	assert.Empty(t, p.Kind, "kept without its kind, as the manager's caches keep typed objects")

	obj, err = runtime.Decode(d, []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`))
	require.NoError(t, err)
	st, ok := obj.(*metav1.Status)
	require.True(t, ok, "a Status, got %T", obj)
	assert.Equal(t, int32(410), st.Code)

	var list shadowPodChargeList
	_, _, err = d.Decode([]byte(`{"kind":"ShadowPodList","apiVersion":"offloading.liqo.io/v1beta1","metadata":{"resourceVersion":"9"},"items":[`+pod+`]}`), nil, &list)
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "9", list.ResourceVersion)
	assert.Equal(t, "user-s", list.Items[0].User)
	assert.Empty(t, list.Items[0].Kind, "a listed ShadowPod is kept without its kind too")

	_, err = runtime.Decode(d, []byte(`{"kind":`))
	require.Error(t, err, "bad JSON is an error")
	_, _, err = d.Decode([]byte(pod), nil, &corev1.Pod{})
	require.Error(t, err, "a type it does not know is an error")
	require.ErrorIs(t, d.Encode(p, io.Discard), errChargeEncode)
}

// splitWatchEvent agrees with encoding/json wherever it answers, strings
// holding brackets, quotes and escapes included, and declines what it does
// not recognise.
func TestSplitWatchEventAgreesWithJSON(t *testing.T) {
	objects := []string{
		`{}`,
		`{"a":"}"}`,
		`{"a":"\"}{","b":["]",{"c":"\\"}]}`,
		`{"metadata":{"labels":{"k":"v}}\\\""}},"x":[[],{}]}`,
	}
	for _, obj := range objects {
		for _, frame := range []string{`{"type":"ADDED","object":` + obj + `}`, `{"type":"ADDED","object":` + obj + "}\n"} {
			typ, object, ok := splitWatchEvent([]byte(frame))
			require.True(t, ok, frame)
			var want metav1.WatchEvent
			require.NoError(t, json.Unmarshal([]byte(frame), &want), frame)
			assert.Equal(t, want.Type, typ, frame)
			assert.Equal(t, string(want.Object.Raw), string(object), frame)
		}
	}
	for _, frame := range []string{
		`{"type":"ADDED","object":{"a":1},"extra":{}}`,
		`{"type":"ADD\"ED","object":{}}`,
		`{"type":"ADDED","object":{"a":"}`,
		`{"type":"ADDED","object":[]}`,
		`{"object":{},"type":"ADDED"}`,
		`{"type":"ADDED"}`,
	} {
		_, _, ok := splitWatchEvent([]byte(frame))
		assert.False(t, ok, frame)
	}
}

// FuzzSplitWatchEvent: wherever splitWatchEvent answers for a valid
// frame, encoding/json answers the same; for an invalid frame, the object
// it returns does not decode either, so nothing wrong is kept.
func FuzzSplitWatchEvent(f *testing.F) {
	f.Add(`{"type":"ADDED","object":{"a":"}\"{"}}`)
	f.Add(`{"type":"BOOKMARK","object":{"metadata":{"annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n")
	f.Add(`{"type":"ERROR","object":{"kind":"Status","code":410}}`)
	f.Fuzz(func(t *testing.T, frame string) {
		typ, object, ok := splitWatchEvent([]byte(frame))
		if !ok {
			return
		}
		if !json.Valid([]byte(frame)) {
			assert.False(t, json.Valid(object), "an invalid frame gave a valid object: %q", frame)
			return
		}
		var want metav1.WatchEvent
		if err := json.Unmarshal([]byte(frame), &want); err != nil {
			return // valid JSON of another shape (a type that is not a string)
		}
		assert.Equal(t, want.Type, typ, frame)
		assert.Equal(t, string(want.Object.Raw), string(object), frame)
	})
}
