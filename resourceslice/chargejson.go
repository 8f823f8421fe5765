package resourceslice

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// A ShadowPod's JSON, read in one pass for its charge.
//
// encoding/json reads a document twice, a validity scan and then the
// decode, both through a byte-at-a-time state machine, and decodes by
// reflection. Most of a ShadowPod's bytes are a pod spec the charge never
// reads, and those two passes were most of what a ShadowPod event cost.
// jsonReader reads the document once, checks all of it against JSON's
// grammar as encoding/json does, and podJSON keeps only what
// shadowPodCharge needs.
//
// Each value is decoded as encoding/json decodes it into the field's type:
// a null leaves a string or a struct as it was and empties a map or a list;
// a value of the wrong type is an error; a string holding an escape or a
// non-ASCII byte is unquoted by encoding/json; times and quantities are
// decoded by their own UnmarshalJSON. Keys match exactly, as the API
// machinery's decoder (sigs.k8s.io/json) matches them. One difference,
// for JSON the API server never writes: where an object names a list
// twice, the second list replaces the first (encoding/json decodes it into
// the first one's elements).

// maxJSONDepth is the nesting encoding/json accepts.
const maxJSONDepth = 10000

// jsonReader reads one JSON document, b, from i.
type jsonReader struct {
	b     []byte
	i     int
	depth int
}

// fail is a syntax error at the reader's position.
func (r *jsonReader) fail(what string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", r.i, what)
}

// peek skips white space and returns the next byte, 0 at the end.
func (r *jsonReader) peek() byte {
	for r.i < len(r.b) {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return c
		}
	}
	return 0
}

// null reads a null if one is next.
func (r *jsonReader) null() bool {
	if r.peek() == 'n' && bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += len("null")
		return true
	}
	return false
}

// str reads the string at r.i, quotes included; plain says that it holds
// no escape and no byte outside printable ASCII, so its text is its bytes.
func (r *jsonReader) str() (tok []byte, plain bool, err error) {
	start := r.i
	r.i++ // the opening quote
	plain = true
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return r.b[start:r.i], plain, nil
		case c == '\\':
			plain = false
			if r.i+1 >= len(r.b) {
				return nil, false, r.fail("unterminated string")
			}
			switch r.b[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			case 'u':
				if r.i+6 > len(r.b) || !isHex(r.b[r.i+2:r.i+6]) {
					return nil, false, r.fail(`bad \u escape`)
				}
				r.i += 6
			default:
				return nil, false, r.fail("bad escape")
			}
		case c < 0x20:
			return nil, false, r.fail("control character in a string")
		default:
			if c >= 0x80 {
				plain = false // encoding/json replaces invalid UTF-8
			}
			r.i++
		}
	}
	return nil, false, r.fail("unterminated string")
}

// isHex says whether b is all hexadecimal digits.
func isHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// unquote is a string token's text.
func unquote(tok []byte, plain bool) (string, error) {
	if plain {
		return string(tok[1 : len(tok)-1]), nil
	}
	var s string
	err := json.Unmarshal(tok, &s)
	return s, err
}

// text reads a string, or a null, which leaves s as it was.
func (r *jsonReader) text(s *string, field string) error {
	if r.null() {
		return nil
	}
	if r.peek() != '"' {
		return r.wrongType(field, "a string")
	}
	tok, plain, err := r.str()
	if err != nil {
		return err
	}
	*s, err = unquote(tok, plain)
	return err
}

// wrongType is the error for a value that is valid JSON of another type
// than field's; the value's own syntax is checked first, as encoding/json
// reports a syntax error before a type error.
func (r *jsonReader) wrongType(field, want string) error {
	at := r.i
	if err := r.skip(); err != nil {
		return err
	}
	return fmt.Errorf("decoding a ShadowPod: %s at byte %d is not %s", field, at, want)
}

// raw reads any value and returns its bytes.
func (r *jsonReader) raw() ([]byte, error) {
	r.peek()
	start := r.i
	err := r.skip()
	return r.b[start:r.i], err
}

// object reads an object, calling member for each member's key with the
// reader at its value, which member must read; a null is no object.
func (r *jsonReader) object(field string, member func(key []byte) error) error {
	return r.members(field, true, member)
}

// members is object; keys says whether member reads the keys, which are
// then unquoted (skip reads none: managed fields' keys are full of
// escaped quotes).
func (r *jsonReader) members(field string, keys bool, member func(key []byte) error) error {
	if r.null() {
		return nil
	}
	if r.peek() != '{' {
		return r.wrongType(field, "an object")
	}
	r.i++
	if r.depth++; r.depth > maxJSONDepth {
		return r.fail("nested too deep")
	}
	if r.peek() == '}' {
		r.i++
		r.depth--
		return nil
	}
	for {
		if r.peek() != '"' {
			return r.fail("want a key")
		}
		tok, plain, err := r.str()
		if err != nil {
			return err
		}
		key := tok[1 : len(tok)-1]
		if keys && !plain {
			s, err := unquote(tok, false)
			if err != nil {
				return err
			}
			key = []byte(s)
		}
		if r.peek() != ':' {
			return r.fail("want a colon")
		}
		r.i++
		if err := member(key); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			r.depth--
			return nil
		default:
			return r.fail("want a comma or a closing brace")
		}
	}
}

// array reads an array, calling elem with the reader at each element,
// which elem must read; a null is no array.
func (r *jsonReader) array(field string, elem func(i int) error) error {
	if r.null() {
		return nil
	}
	if r.peek() != '[' {
		return r.wrongType(field, "an array")
	}
	r.i++
	if r.depth++; r.depth > maxJSONDepth {
		return r.fail("nested too deep")
	}
	if r.peek() == ']' {
		r.i++
		r.depth--
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			r.depth--
			return nil
		default:
			return r.fail("want a comma or a closing bracket")
		}
	}
}

// skip reads any value, checking its syntax.
func (r *jsonReader) skip() error {
	switch c := r.peek(); {
	case c == '{':
		return r.members("", false, func([]byte) error { return r.skip() })
	case c == '[':
		return r.array("", func(int) error { return r.skip() })
	case c == '"':
		_, _, err := r.str()
		return err
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return r.number()
	case c == 0 && r.i == len(r.b):
		return r.fail("unexpected end")
	default:
		return r.fail(fmt.Sprintf("unexpected %q", c))
	}
}

// literal reads true, false or null.
func (r *jsonReader) literal(word string) error {
	if !bytes.HasPrefix(r.b[r.i:], []byte(word)) {
		return r.fail("bad literal")
	}
	r.i += len(word)
	return nil
}

// number reads a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *jsonReader) number() error {
	if r.b[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.b) && r.b[r.i] == '0':
		r.i++
	case r.digits() == 0:
		return r.fail("bad number")
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if r.digits() == 0 {
			return r.fail("bad fraction")
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if r.digits() == 0 {
			return r.fail("bad exponent")
		}
	}
	return nil
}

// digits reads decimal digits and says how many.
func (r *jsonReader) digits() int {
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	return r.i - start
}

// podJSON is what the charge reads of a ShadowPod's JSON.
type podJSON struct {
	kind                          string
	name, namespace, uid, version string
	created                       metav1.Time
	user                          string
	initialEvents                 string
	hasInitialEvents              bool
	containers, initContainers    []corev1.ResourceList
	phase                         string
}

// errTrailing: a document holds one value.
var errTrailing = errors.New("invalid JSON: data after the value")

// readPodJSON reads a ShadowPod's JSON.
func readPodJSON(data []byte) (podJSON, error) {
	var p podJSON
	r := &jsonReader{b: data}
	err := r.object("the ShadowPod", func(key []byte) error {
		switch string(key) {
		case "kind":
			return r.text(&p.kind, "kind")
		case "metadata":
			return r.object("metadata", func(key []byte) error { return p.metadata(r, key) })
		case "spec":
			return r.object("spec", func(key []byte) error {
				if string(key) != "pod" {
					return r.skip()
				}
				return r.object("spec.pod", func(key []byte) error {
					switch string(key) {
					case "containers":
						return r.containers(&p.containers, "spec.pod.containers")
					case "initContainers":
						return r.containers(&p.initContainers, "spec.pod.initContainers")
					}
					return r.skip()
				})
			})
		case "status":
			return r.object("status", func(key []byte) error {
				if string(key) != "phase" {
					return r.skip()
				}
				return r.text(&p.phase, "status.phase")
			})
		}
		return r.skip()
	})
	if err != nil {
		return podJSON{}, err
	}
	if r.peek() != 0 || r.i != len(r.b) {
		return podJSON{}, errTrailing
	}
	return p, nil
}

// metadata reads the member key of a ShadowPod's metadata.
func (p *podJSON) metadata(r *jsonReader, key []byte) error {
	switch string(key) {
	case "name":
		return r.text(&p.name, "metadata.name")
	case "namespace":
		return r.text(&p.namespace, "metadata.namespace")
	case "uid":
		return r.text(&p.uid, "metadata.uid")
	case "resourceVersion":
		return r.text(&p.version, "metadata.resourceVersion")
	case "creationTimestamp":
		raw, err := r.raw()
		if err != nil {
			return err
		}
		return p.created.UnmarshalJSON(raw)
	case "labels":
		if r.null() {
			p.user = "" // a null empties the map
			return nil
		}
		return r.object("metadata.labels", func(key []byte) error {
			if string(key) != labelCreatorUser {
				return r.stringOrNull("metadata.labels")
			}
			p.user = "" // a null value is an empty one in a map
			return r.text(&p.user, "metadata.labels")
		})
	case "annotations":
		if r.null() {
			p.initialEvents, p.hasInitialEvents = "", false
			return nil
		}
		return r.object("metadata.annotations", func(key []byte) error {
			if string(key) != metav1.InitialEventsAnnotationKey {
				return r.stringOrNull("metadata.annotations")
			}
			p.initialEvents, p.hasInitialEvents = "", true
			return r.text(&p.initialEvents, "metadata.annotations")
		})
	}
	return r.skip()
}

// stringOrNull reads a map value of type string that the charge does not
// keep.
func (r *jsonReader) stringOrNull(field string) error {
	var ignored string
	return r.text(&ignored, field)
}

// containers reads a list of containers' requests; a null empties it.
func (r *jsonReader) containers(list *[]corev1.ResourceList, field string) error {
	if r.null() {
		*list = nil
		return nil
	}
	out := []corev1.ResourceList{}
	err := r.array(field, func(int) error {
		var requests corev1.ResourceList
		err := r.object(field+"[]", func(key []byte) error {
			if string(key) != "resources" {
				return r.skip()
			}
			return r.object(field+"[].resources", func(key []byte) error {
				if string(key) != "requests" {
					return r.skip()
				}
				return r.requests(&requests, field+"[].resources.requests")
			})
		})
		out = append(out, requests)
		return err
	})
	if err == nil {
		*list = out
	}
	return err
}

// requests reads a resource list into *list, adding to what is there as
// encoding/json does; a null empties it.
func (r *jsonReader) requests(list *corev1.ResourceList, field string) error {
	if r.null() {
		*list = nil
		return nil
	}
	return r.object(field, func(key []byte) error {
		raw, err := r.raw()
		if err != nil {
			return err
		}
		var q resource.Quantity
		if err := q.UnmarshalJSON(raw); err != nil {
			return err
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[corev1.ResourceName(key)] = q
		return nil
	})
}

// charge is the ShadowPod the JSON describes, as shadowPodCharge keeps it.
func (p *podJSON) charge() shadowPodCharge {
	var annotations map[string]string
	if p.hasInitialEvents {
		// A watch's bookmark that ends its initial events: the reflector
		// syncs on it.
		annotations = map[string]string{metav1.InitialEventsAnnotationKey: p.initialEvents}
	}
	return shadowPodCharge{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.namespace, UID: types.UID(p.uid),
			ResourceVersion: p.version, CreationTimestamp: p.created, Annotations: annotations},
		User:   p.user,
		Phase:  corev1.PodPhase(p.phase),
		Charge: ledger.RequestsCharge(p.containers, p.initContainers),
	}
}
