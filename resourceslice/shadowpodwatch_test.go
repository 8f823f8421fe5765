package resourceslice

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/utils/ptr"
)

// aShadowPod is a ShadowPod as a consumer's virtual kubelet makes one: two
// containers with env, mounts and limits, two volumes, managed fields.
func aShadowPod(i int) *offloadingv1beta1.ShadowPod {
	container := func(n string) corev1.Container {
		c := corev1.Container{Name: n, Image: "registry.example/shop/" + n + ":1.4.2",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + n}, {Name: "token", MountPath: "/var/run/secrets/token"}},
		}
		for j := range 5 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("APP_SETTING_%d", j), Value: fmt.Sprintf("value-%d-of-%s", j, n)})
		}
		return c
	}
	// The managed fields of a ShadowPod, as the API server records them: a
	// list's items keyed by their name, in keys full of escaped quotes.
	fields := `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}},"f:spec":{".":{},"f:pod":{".":{},"f:containers":{`
	for i, n := range []string{"app", "sidecar"} {
		if i > 0 {
			fields += ","
		}
		fields += `"k:{\"name\":\"` + n + `\"}":{".":{},"f:env":{`
		for j := range 5 {
			if j > 0 {
				fields += ","
			}
			fields += fmt.Sprintf(`"k:{\"name\":\"APP_SETTING_%d\"}":{".":{},"f:name":{},"f:value":{}}`, j)
		}
		fields += `},"f:image":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}`
	}
	fieldsV1 := []byte(fields + `}}}}`)
	return &offloadingv1beta1.ShadowPod{
		TypeMeta: metav1.TypeMeta{APIVersion: offloadingv1beta1.SchemeGroupVersion.String(), Kind: "ShadowPod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cool-consumer", Name: fmt.Sprintf("shop-backend-%06d", i),
			UID: "4b1c3f6e-58a2-4d8e-9a0b-2f5e7c9d1a34", ResourceVersion: fmt.Sprint(100000 + i), Generation: 1,
			CreationTimestamp: metav1.Date(2026, 11, 25, 10, 0, 0, 0, metav1.Now().Location()),
			Labels: map[string]string{labelCreatorUser: "liqo-cluster-cool-consumer", "app": "shop", "tier": "backend",
				"liqo.io/managed-by": "shadowpod", "pod-template-hash": "7d9f8c6b5"},
			Annotations: map[string]string{"liqo.io/origin": "consumer", "kubectl.kubernetes.io/restartedAt": "2026-11-25T10:00:00Z"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "virtual-kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "offloading.liqo.io/v1beta1", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: fieldsV1}}},
		},
		Spec: offloadingv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}}}}}},
			},
		}},
		Status: offloadingv1beta1.ShadowPodStatus{Phase: corev1.PodRunning},
	}
}

// aWatchStream is n ADDED events as the API server writes a JSON watch.
func aWatchStream(b testing.TB, n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		obj, err := json.Marshal(aShadowPod(i))
		if err != nil {
			b.Fatal(err)
		}
		ev, err := json.Marshal(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: obj}})
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(ev)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
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
