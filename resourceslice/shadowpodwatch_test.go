package resourceslice

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
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
