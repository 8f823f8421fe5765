package resourceslice

import (
	"bytes"
	"errors"
	"fmt"
)

// Reading the API server's answer to a status write: only its
// metadata.resourceVersion (answerVersion), with a scanner that walks JSON
// without decoding it (jsonScan). restStatus uses it; see status.go.

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
