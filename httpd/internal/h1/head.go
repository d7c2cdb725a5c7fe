package h1

import "iter"

// Field is one header (or trailer) field line: its name as sent (not
// canonicalised) and its value without the surrounding whitespace. Both
// point into the buffer the field was parsed from.
type Field struct {
	Name  []byte
	Value []byte
}

// Framing is how a message body is delimited (RFC 9112 §6).
type Framing uint8

const (
	// BodyNone: no body (no Content-Length nor Transfer-Encoding, or a
	// Content-Length of 0). For a response, no framing field is written.
	BodyNone Framing = iota
	// BodyLength: exactly ContentLength bytes follow the head.
	BodyLength
	// BodyChunked: the chunked transfer coding (ChunkedDecoder).
	BodyChunked
)

// Expect is what a request's Expect field asks for.
type Expect uint8

const (
	// ExpectNone: no expectation, or one that must be ignored (100-continue
	// in an HTTP/1.0 request, RFC 9110 §10.1.1), or an empty field.
	ExpectNone Expect = iota
	// Expect100Continue: the client waits for "100 Continue" before it
	// sends the body. A server sends it before it reads a body (Body !=
	// BodyNone), or answers with a final status instead.
	Expect100Continue
	// ExpectUnknown: an expectation other than 100-continue; a server
	// answers 417 (net/http does).
	ExpectUnknown
)

// TargetForm is the form of a request-target (RFC 9112 §3.2).
type TargetForm uint8

const (
	FormOrigin    TargetForm = iota // "/path?query"
	FormAbsolute                    // "http://host/path?query"
	FormAuthority                   // "host:port", CONNECT only
	FormAsterisk                    // "*", OPTIONS only
)

// Head is a parsed request head. Every []byte in it points into the buffer
// it was parsed from (no copy): a Head is valid only while that buffer
// holds the same bytes. Copy what must outlive it. The zero Head is ready
// for use; parsing into the same Head again reuses its Fields' storage.
type Head struct {
	Method []byte // a token, e.g. GET
	Target []byte // the request-target as sent
	Proto  []byte // HTTP/1.0, HTTP/1.1 (or HTTP/1.2..9, treated as 1.1)
	Minor  int    // the minor version: 0 for HTTP/1.0, 1 or more otherwise

	Form  TargetForm
	Path  []byte // the path of an origin-form or absolute-form target, still %-escaped; "*" for asterisk-form; empty for absolute-form without a path (meaning "/")
	Query []byte // the query after '?', without it; nil when the target has no '?'

	// Host: the authority of an absolute-form or authority-form target,
	// else the Host field's value (which may be empty); nil when neither.
	Host []byte

	Fields []Field // every field line, in order, duplicates kept

	Body          Framing
	ContentLength int64 // BodyLength: the length; BodyChunked: -1; BodyNone: 0

	// Close: the connection closes after this exchange (Connection: close,
	// or HTTP/1.0 without Connection: keep-alive). An HTTP/1.0 request with
	// Close false asked for keep-alive: the response says so too.
	Close  bool
	Expect Expect
}

// Get returns the value of the first field named name, compared ASCII
// case-insensitively (so "content-type" finds Content-Type), and whether
// there is one. No allocation.
func (h *Head) Get(name string) ([]byte, bool) {
	return getField(h.Fields, name)
}

// Values yields the value of every field named name (ASCII
// case-insensitive), in order.
func (h *Head) Values(name string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for i := range h.Fields {
			if EqualFold(h.Fields[i].Name, name) && !yield(h.Fields[i].Value) {
				return
			}
		}
	}
}

func getField(fields []Field, name string) ([]byte, bool) {
	for i := range fields {
		if EqualFold(fields[i].Name, name) {
			return fields[i].Value, true
		}
	}
	return nil, false
}

// EqualFold reports whether b and s are equal under ASCII case folding
// (bytes outside A-Z and a-z must match exactly).
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// AppendCanonical appends the canonical form of the field name to dst, as
// net/textproto.CanonicalMIMEHeaderKey makes it: the first letter and every
// letter after a hyphen upper case, the others lower case ("content-type"
// becomes "Content-Type"). name is assumed valid (a token).
func AppendCanonical(dst, name []byte) []byte {
	upper := true
	for _, c := range name {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
		upper = c == '-'
	}
	return dst
}
