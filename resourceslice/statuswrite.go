package resourceslice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// statusWriter sends a slice's status patch. On success rs holds what the
// API server now holds: the patch was computed from the slice rs was built
// from and applied under its resourceVersion, so the server's object is rs
// with the new resourceVersion.
type statusWriter interface {
	patchStatus(ctx context.Context, rs *authv1beta1.ResourceSlice, p client.Patch, owner client.FieldOwner) error
}

// clientStatus writes through a client.Client, which decodes the whole
// answer into rs: the path of a Reconciler built with NewReconciler, whose
// client may be the test harness's or one the user wrapped.
type clientStatus struct{ c client.Client }

func (w clientStatus) patchStatus(ctx context.Context, rs *authv1beta1.ResourceSlice, p client.Patch, owner client.FieldOwner) error {
	return w.c.Status().Patch(ctx, rs, p, owner)
}

// restStatus writes through a REST client of the manager's config and HTTP
// client (same transport, same authentication) and reads only the answer's
// metadata.resourceVersion: decoding the whole slice the API server sends
// back (CSR and certificates included) was nine tenths of a status write's
// CPU, and the answer tells nothing else the controller does not know.
type restStatus struct{ rest rest.Interface }

// newRESTStatus builds the status writer of a class controller the SDK
// built from mgr.
func newRESTStatus(mgr manager.Manager) (restStatus, error) {
	gvk := authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind)
	// JSON only: ResourceSlices are custom resources, which have no
	// protobuf encoding.
	rc, err := apiutil.RESTClientForGVK(gvk, true, false, mgr.GetConfig(), serializer.NewCodecFactory(mgr.GetScheme()), mgr.GetHTTPClient())
	if err != nil {
		return restStatus{}, fmt.Errorf("building the REST client of status writes: %w", err)
	}
	return restStatus{rest: rc}, nil
}

func (w restStatus) patchStatus(ctx context.Context, rs *authv1beta1.ResourceSlice, p client.Patch, owner client.FieldOwner) error {
	data, err := p.Data(rs)
	if err != nil {
		return err
	}
	body, err := w.rest.Patch(p.Type()).
		Namespace(rs.Namespace).
		Resource(authv1beta1.ResourceSliceResource).
		Name(rs.Name).
		SubResource("status").
		Param("fieldManager", string(owner)).
		Body(data).
		Do(ctx).
		Raw()
	if err != nil {
		return err
	}
	rv, err := answerVersion(body)
	if err != nil {
		// Not the shape an API server sends: decode it all rather than
		// guess.
		if uerr := json.Unmarshal(body, rs); uerr != nil {
			return fmt.Errorf("reading the API server's answer to a status patch: %w", errors.Join(err, uerr))
		}
		return nil
	}
	rs.ResourceVersion = rv
	return nil
}

// answerVersion reads metadata.resourceVersion from an object's JSON,
// stopping there: the fields after metadata (spec and status, where a
// slice's CSR and certificates are) are not read at all, and those before
// it only skipped over, without decoding. Anything it does not expect
// (invalid JSON, an escaped key or version) is an error, and the caller
// decodes the answer whole.
func answerVersion(body []byte) (string, error) {
	s := &jsonScan{b: body}
	for key := range s.members() {
		if key != "metadata" {
			s.skip()
			continue
		}
		for k := range s.members() {
			if k != "resourceVersion" {
				s.skip()
				continue
			}
			if rv := s.plainString(); rv != "" && s.err == nil {
				return rv, nil
			}
			return "", errors.New("metadata.resourceVersion is not a plain, non-empty string")
		}
		break
	}
	if s.err != nil {
		return "", s.err
	}
	return "", errors.New("no metadata.resourceVersion")
}

// jsonScan walks JSON without decoding it; the first thing it does not
// expect sets err and ends every walk.
type jsonScan struct {
	b   []byte
	i   int
	err error
}

func (s *jsonScan) fail(what string) {
	if s.err == nil {
		s.err = fmt.Errorf("unexpected JSON at byte %d: %s", s.i, what)
	}
}

func (s *jsonScan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// members yields the keys of the object that starts here, the scanner
// standing on each key's value; the caller reads or skips it.
func (s *jsonScan) members() func(yield func(string) bool) {
	return func(yield func(string) bool) {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '{' {
			s.fail("want an object")
			return
		}
		s.i++
		for first := true; s.err == nil; first = false {
			s.space()
			if s.i < len(s.b) && s.b[s.i] == '}' && first {
				s.i++
				return
			}
			key := s.plainString()
			s.space()
			if s.err != nil || s.i >= len(s.b) || s.b[s.i] != ':' {
				s.fail("want a key and a colon")
				return
			}
			s.i++
			if !yield(key) || s.err != nil {
				return
			}
			s.space()
			switch {
			case s.i < len(s.b) && s.b[s.i] == ',':
				s.i++
			case s.i < len(s.b) && s.b[s.i] == '}':
				s.i++
				return
			default:
				s.fail("want a comma or the object's end")
				return
			}
		}
	}
}

// plainString reads a string with no escapes in it.
func (s *jsonScan) plainString() string {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.fail("want a string")
		return ""
	}
	end := bytes.IndexByte(s.b[s.i+1:], '"')
	if end < 0 {
		s.fail("unterminated string")
		return ""
	}
	v := s.b[s.i+1 : s.i+1+end]
	if bytes.IndexByte(v, '\\') >= 0 {
		s.fail("escaped string")
		return ""
	}
	s.i += end + 2
	return string(v)
}

// skip steps over one value of any kind.
func (s *jsonScan) skip() {
	s.space()
	depth := 0
	for s.i < len(s.b) && s.err == nil {
		c := s.b[s.i]
		switch c {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			if s.i >= len(s.b) {
				s.fail("unterminated string")
				return
			}
			s.i++
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return // the end of the enclosing object: a value was missing
			}
			depth--
			s.i++
		case ',':
			if depth == 0 {
				return
			}
			s.i++
		default:
			s.i++
		}
		if depth == 0 && (c == '"' || c == '}' || c == ']') {
			return
		}
	}
	if depth != 0 {
		s.fail("unterminated value")
	}
}
