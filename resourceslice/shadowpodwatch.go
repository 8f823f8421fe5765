package resourceslice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// The ShadowPod informer's list and watch, decoded by the SDK.
//
// A cache built on the manager's scheme reads every watch event five
// times over before the SDK's code sees it: once to find where the event
// ends (the JSON framer decodes it), then the event's envelope, after
// sniffing its kind (a whole JSON decode for two fields), then the object
// inside, after sniffing its kind again. On a cluster whose consumers start
// and stop pods, that is most of what the ShadowPod watch costs. The
// ShadowPod cache lists and watches through a REST client whose one codec
// finds each event's end by matching brackets (objectFramer), splits the
// envelope the same way (splitWatchEvent), and reads the object inside
// once, into shadowPodCharge (readPodJSON); a list is decoded into
// shadowPodChargeList. BenchmarkShadowPodWatchEvent measures both paths.

// shadowPodInformer is the ShadowPod cache's NewInformer: for
// shadowPodCharge it lists and watches Liqo's shadowpods, in every
// namespace, through chargeCodec, with the options the cache's own
// list-watch would set; any other type is the cache's as usual.
func shadowPodInformer(cfg *rest.Config, hc *http.Client) (func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer, error) {
	rc, err := chargeClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if _, ok := obj.(*shadowPodCharge); ok {
			lw = chargeListWatch(rc)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}, nil
}

// chargeClient is a REST client of Liqo's offloading API that decodes with
// chargeCodec.
func chargeClient(cfg *rest.Config, hc *http.Client) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	gv := offloadingv1beta1.SchemeGroupVersion
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = chargeCodec{}
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("building the ShadowPod client: %w", err)
	}
	return rc, nil
}

// chargeListWatch lists and watches ShadowPods in every namespace, with
// bookmarks, as the cache's own list-watch does.
func chargeListWatch(rc rest.Interface) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &shadowPodChargeList{}
			err := rc.Get().Resource(shadowPodResource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(list)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			opts.AllowWatchBookmarks = true
			return rc.Get().Resource(shadowPodResource).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}
}

// chargeCodec is the ShadowPod client's one content type: JSON, decoded by
// chargeDecoder, framed as the API server frames a JSON watch.
type chargeCodec struct{}

var _ runtime.NegotiatedSerializer = chargeCodec{}

// SupportedMediaTypes implements runtime.NegotiatedSerializer.
func (chargeCodec) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{{
		MediaType:        runtime.ContentTypeJSON,
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       chargeDecoder{},
		StreamSerializer: &runtime.StreamSerializerInfo{
			EncodesAsText: true,
			Serializer:    chargeDecoder{},
			Framer:        objectFramer{},
		},
	}}
}

// EncoderForVersion implements runtime.NegotiatedSerializer.
func (chargeCodec) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

// DecoderToVersion implements runtime.NegotiatedSerializer.
func (chargeCodec) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// chargeDecoder decodes the ShadowPod API's JSON into what it is read
// into: a watch event's envelope, a list, or (into nil, as a watch event's
// object and an error answer are decoded) a ShadowPod, or the
// metav1.Status an error answer or an ERROR event carries.
type chargeDecoder struct{}

// errChargeEncode: the ShadowPod client only reads.
var errChargeEncode = errors.New("the ShadowPod client only reads: it encodes nothing")

// Decode implements runtime.Decoder.
func (chargeDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	switch into := into.(type) {
	case *metav1.WatchEvent:
		if typ, object, ok := splitWatchEvent(data); ok {
			into.Type, into.Object = typ, runtime.RawExtension{Raw: bytes.Clone(object)}
			return into, nil, nil
		}
		if err := json.Unmarshal(data, into); err != nil {
			return nil, nil, fmt.Errorf("decoding a ShadowPod watch event: %w", err)
		}
		return into, nil, nil
	case *shadowPodChargeList:
		if err := json.Unmarshal(data, into); err != nil {
			return nil, nil, fmt.Errorf("decoding a ShadowPod list: %w", err)
		}
		return into, nil, nil
	case nil, *shadowPodCharge:
		p, _ := into.(*shadowPodCharge)
		if p == nil {
			p = &shadowPodCharge{}
		}
		kind, err := p.decode(data)
		if err != nil || kind == "Status" {
			// An error answer, or an ERROR event's object.
			var st metav1.Status
			if json.Unmarshal(data, &st) == nil && st.Kind == "Status" {
				return &st, nil, nil
			}
			if err != nil {
				return nil, nil, fmt.Errorf("decoding a ShadowPod: %w", err)
			}
		}
		return p, nil, nil
	}
	return nil, nil, fmt.Errorf("the ShadowPod client cannot decode into %T", into)
}

// splitWatchEvent splits a watch event laid out as the API server writes
// it, {"type":"ADDED","object":{...}}, into its type and its object's
// bytes, without decoding either (the object is decoded next, which checks
// it). ok is false for any other layout, which json.Unmarshal decodes.
func splitWatchEvent(data []byte) (typ string, object []byte, ok bool) {
	const head, sep = `{"type":"`, `","object":`
	rest, found := bytes.CutPrefix(data, []byte(head))
	if !found {
		return "", nil, false
	}
	// Event types are upper-case words (ADDED, BOOKMARK, ERROR...).
	end := 0
	for end < len(rest) && rest[end] >= 'A' && rest[end] <= 'Z' {
		end++
	}
	if end == len(rest) || rest[end] != '"' {
		return "", nil, false
	}
	typ = string(rest[:end])
	if rest, found = bytes.CutPrefix(rest[end:], []byte(sep)); !found {
		return "", nil, false
	}
	n := objectLen(rest)
	if n < 0 || string(bytes.TrimRight(rest[n:], " \t\r\n")) != "}" {
		return "", nil, false
	}
	return typ, rest[:n], true
}

// objectLen is the length of the JSON object b starts with, found by
// matching its brackets outside strings; -1 if b does not start with one
// that ends.
func objectLen(b []byte) int {
	if len(b) == 0 || b[0] != '{' {
		return -1
	}
	var m brackets
	return m.scan(b)
}

// brackets matches a JSON value's brackets outside its strings, over as
// many pieces of it as it comes in.
type brackets struct {
	depth            int
	inString, escape bool
}

// scan reads b, the next piece: it returns the length of b up to the
// bracket that closes the value, or -1 if the value goes on after b.
func (m *brackets) scan(b []byte) int {
	i := 0
	if m.escape && len(b) > 0 {
		m.escape = false
		i++
	}
	for i < len(b) {
		if m.inString {
			// Runs of plain bytes are most of a string and of a document:
			// they are skipped a table lookup a byte.
			for i < len(b) && !stringStop[b[i]] {
				i++
			}
			if i == len(b) {
				break
			}
			if b[i] == '"' {
				m.inString = false
				i++
				continue
			}
			if i+1 == len(b) { // a backslash, whose escaped byte is in the next piece
				m.escape = true
				return -1
			}
			i += 2
			continue
		}
		for i < len(b) && !structStop[b[i]] {
			i++
		}
		if i == len(b) {
			break
		}
		switch b[i] {
		case '"':
			m.inString = true
		case '{', '[':
			m.depth++
		default: // '}', ']'
			if m.depth--; m.depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// stringStop and structStop are the bytes brackets.scan stops at inside a
// string and outside one: lookup tables, never written after they are
// built.
var stringStop, structStop = byteSet("\"\\"), byteSet(`"{}[]`)

// byteSet is a table of the bytes in s.
func byteSet(s string) (set [256]bool) {
	for i := range len(s) {
		set[s[i]] = true
	}
	return set
}

// objectFramer frames a JSON watch as the API server writes one: a JSON
// object per event. Its reader finds where each object ends by matching
// brackets (decoding the frame checks it) where the JSON framer decodes
// each object to find its end.
type objectFramer struct{}

// NewFrameReader implements runtime.Framer.
func (objectFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &objectFrames{r: r} }

// NewFrameWriter implements runtime.Framer: the client writes no stream.
func (objectFramer) NewFrameWriter(w io.Writer) io.Writer { return w }

// objectFrames reads a stream of JSON objects, one per Read; a Read whose
// buffer is too small for the object gets io.ErrShortBuffer and the rest
// of the object on the next Reads, as the streaming decoder expects.
type objectFrames struct {
	r io.ReadCloser
	// buf[start:] is read and not yet handed out; buf[start:scanned] is
	// the part of the next object matched so far, with m's state.
	buf            []byte
	start, scanned int
	m              brackets
	rest           []byte // of an object a short buffer did not take
	err            error  // r's, once it has one
}

// errNotAnObject: each frame of a JSON watch is an object.
var errNotAnObject = errors.New("a ShadowPod watch frame is not a JSON object")

// Read implements io.Reader.
func (f *objectFrames) Read(p []byte) (int, error) {
	frame := f.rest
	if len(frame) == 0 {
		var err error
		if frame, err = f.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, frame)
	if f.rest = frame[n:]; len(f.rest) > 0 {
		return n, io.ErrShortBuffer
	}
	return n, nil
}

// Close implements io.Closer.
func (f *objectFrames) Close() error { return f.r.Close() }

// next is the next object in the stream.
func (f *objectFrames) next() ([]byte, error) {
	for {
		if f.scanned == f.start { // between objects
			for f.start < len(f.buf) && isSpace(f.buf[f.start]) {
				f.start++
			}
			f.scanned = f.start
			if f.start < len(f.buf) && f.buf[f.start] != '{' {
				return nil, errNotAnObject
			}
		}
		if n := f.m.scan(f.buf[f.scanned:]); n >= 0 {
			frame := f.buf[f.start : f.scanned+n]
			f.start, f.scanned, f.m = f.scanned+n, f.scanned+n, brackets{}
			return frame, nil
		}
		f.scanned = len(f.buf)
		if f.err != nil {
			if errors.Is(f.err, io.EOF) && f.start < len(f.buf) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, f.err
		}
		f.fill()
	}
}

// fill reads more of the stream into buf, after moving what is not yet
// handed out to its start (the frame handed out last has been copied).
func (f *objectFrames) fill() {
	if f.start > 0 {
		n := copy(f.buf, f.buf[f.start:])
		f.buf, f.scanned, f.start = f.buf[:n], f.scanned-f.start, 0
	}
	if len(f.buf) == cap(f.buf) {
		f.buf = slices.Grow(f.buf, max(4096, cap(f.buf)))
	}
	n, err := f.r.Read(f.buf[len(f.buf):cap(f.buf)])
	f.buf, f.err = f.buf[:len(f.buf)+n], err
}

// isSpace says whether c is JSON white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Encode implements runtime.Encoder: it refuses.
func (chargeDecoder) Encode(runtime.Object, io.Writer) error { return errChargeEncode }

// Identifier implements runtime.Encoder.
func (chargeDecoder) Identifier() runtime.Identifier { return "sliceclass-shadowpod-charge" }
