// Command crdbounds bounds and tightens every quantity in a CRD's spec
// schema, in place: hack/crdgen.sh runs it on the CRDs controller-gen
// writes. It also makes the schema read as API docs: controller-gen gives
// a list's items and a map's values the doc comment of their Go type,
// which Go's convention begins with the type's name ("ConsumerStatus is
// what one consumer holds"); crdbounds drops that name, so that kubectl
// explain and every schema reader see no Go identifier ("What one
// consumer holds").
//
// controller-gen gives a resource.Quantity (a ResourceList's values) a
// pattern but no maxLength, and no marker reaches a map's values. The
// pattern admits strings Go cannot parse (1e1.5, an exponent past int64),
// which would make the object undecodable by every client, and exponents
// that take Go minutes to decode (1e99999999); a CEL rule that parses
// quantities (isQuantity) cannot refuse them on Kubernetes 1.33, whose cost
// estimate ignores an int-or-string's maxLength and refuses the CRD as too
// costly, and would itself spend those minutes. So crdbounds gives each
// spec quantity a maxLength (64) and a pattern whose exponent is an integer
// of at most 3 digits: the OpenAPI schema alone, at no CEL cost, refuses
// what Go cannot parse or parses slowly.
//
//	go run ./hack/crdbounds config/crd/sliceclass.io_slicebudgets.yaml
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// maxQuantityLength bounds a quantity's text: "17179869184", "123456789m"
// or "1.5Ei" are far shorter.
const maxQuantityLength = 64

// quantityPattern is the pattern controller-gen gives a resource.Quantity.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// goQuantityPattern is quantityPattern with an exponent Go's parser takes
// and takes at once: an integer (resource.ParseQuantity reads it with
// strconv.ParseInt: no fraction, nothing past int64) of at most 3 digits
// (a longer one costs seconds to minutes of CPU to decode, the slow
// quantities docs/deploying.md's admission policy refuses in slices). It
// refuses only what Go refuses or decodes slowly, and quantities nobody
// writes (an exponent of 1000 or more, or padded with zeros to 4 digits).
const goQuantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?[0-9]{1,3}))?$`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdbounds CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := boundFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdbounds: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

// boundFile rewrites the CRD at path with its spec quantities bounded.
func boundFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := bound(raw)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// bound returns the CRD in raw (one YAML document, as controller-gen
// writes it) with maxLength set and the pattern tightened on every quantity
// under each version's spec schema; the status, which only a manager writes, is left as it is.
// Its output is controller-gen's format: the document marker, then keys in
// order.
func bound(raw []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(raw, []byte("---\n")), &crd); err != nil {
		return nil, err
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return nil, errors.New("no spec.versions: not a CRD")
	}
	n := 0
	for _, v := range versions {
		s, _ := dig(v, "schema", "openAPIV3Schema", "properties", "spec").(map[string]any)
		n += walk(s)
	}
	if n == 0 {
		return nil, errors.New("no quantity in any version's spec schema: nothing to bound")
	}
	for _, v := range versions {
		root, _ := dig(v, "schema", "openAPIV3Schema").(map[string]any)
		plainDocs(root, false)
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

// dig follows keys down nested maps.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// walk bounds and tightens the quantities in the schema s and below, and
// counts them.
func walk(s map[string]any) int {
	if s == nil {
		return 0
	}
	n := 0
	if s["x-kubernetes-int-or-string"] == true && (s["pattern"] == quantityPattern || s["pattern"] == goQuantityPattern) {
		s["maxLength"] = maxQuantityLength
		s["pattern"] = goQuantityPattern
		n++
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			sub, _ := p.(map[string]any)
			n += walk(sub)
		}
	}
	for _, k := range []string{"additionalProperties", "items"} {
		sub, _ := s[k].(map[string]any)
		n += walk(sub)
	}
	return n
}

// goTypeDoc is a description that begins as Go's convention begins a type's
// doc comment: the type's name (an upper-case identifier), then "is".
var goTypeDoc = regexp.MustCompile(`^[A-Z][A-Za-z0-9]* is `)

// plainDocs drops the Go type's name from the description of every list
// item and map value schema in s and below (typeDoc: s is one): "LabelValue
// is a label's value" becomes "A label's value". A field's own description
// (its JSON name first, as the types' comments write them) is left as is.
func plainDocs(s map[string]any, typeDoc bool) {
	if s == nil {
		return
	}
	if d, ok := s["description"].(string); ok && typeDoc {
		if loc := goTypeDoc.FindStringIndex(d); loc != nil {
			rest := d[loc[1]:]
			r, size := utf8.DecodeRuneInString(rest)
			s["description"] = string(unicode.ToUpper(r)) + rest[size:]
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			sub, _ := p.(map[string]any)
			plainDocs(sub, false)
		}
	}
	for _, k := range []string{"additionalProperties", "items"} {
		sub, _ := s[k].(map[string]any)
		plainDocs(sub, true)
	}
}
