package h1

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Continue is the interim response that answers Expect: 100-continue.
const Continue = "HTTP/1.1 100 Continue\r\n\r\n"

// Errors of AppendResponse and AppendLastChunk: the response asked for is
// not one to send. They are the caller's mistakes, not the peer's.
var (
	ErrStatus     = errors.New("h1: status code out of range 100-999")
	ErrReason     = errors.New("h1: control byte in reason phrase")
	ErrFieldName  = errors.New("h1: invalid field name")
	ErrFieldValue = errors.New("h1: invalid field value")
	ErrFieldOwned = errors.New("h1: field set by the Response itself")
	ErrFraming    = errors.New("h1: body framing not allowed for the status")
	ErrContentLen = errors.New("h1: negative Content-Length")
)

// Response is a response head for AppendResponse. The version is always
// HTTP/1.1: a server answers with the highest minor version it speaks
// (RFC 9110 §6.2), an HTTP/1.0 client included.
type Response struct {
	Status int // 100 to 999

	// Reason is the reason phrase; "" means http.StatusText(Status),
	// itself "" for a code net/http does not know (the status line then
	// ends in "NNN ", which is valid).
	Reason string

	// Body and ContentLength say how the body is framed: BodyLength
	// writes Content-Length (which may be 0), BodyChunked writes
	// Transfer-Encoding: chunked, BodyNone writes neither (a 1xx, 204 or
	// 304 response, or a body delimited by closing the connection). The
	// answer to HEAD says what the answer to GET would, and has no body;
	// an HTTP/1.0 client does not know chunked.
	Body          Framing
	ContentLength int64

	Close     bool   // write Connection: close
	KeepAlive bool   // write Connection: keep-alive (the answer to an HTTP/1.0 keep-alive)
	Date      []byte // the Date value (see AppendDate; a server caches it per second); nil writes none

	// Fields are written as given, after Date. They must not hold
	// Content-Length or Transfer-Encoding, nor Connection when Close or
	// KeepAlive is set, nor Date when Date is.
	Fields []Field

	// Checked says what the caller made itself and knows valid, so that
	// it is not checked again for every response.
	Checked Checked
}

// Checked is a set of the parts of a Response its caller vouches for:
// AppendResponse writes them without checking them. Anything else is
// checked.
type Checked uint8

const (
	// CheckedDate: Date is a value AppendDate made (a server's cached
	// one), valid by construction.
	CheckedDate Checked = 1 << iota
	// CheckedFields: Fields were checked once (constants, say): valid
	// names and values, none of them one the Response writes itself.
	CheckedFields
)

// AppendResponse appends the response head r to dst: the status line,
// the fields, and the empty line that ends the head. It allocates nothing
// when dst has room. Every name and value is checked (with httpguts) so
// that nothing the caller passes can split the response; on an error dst
// is returned unchanged.
func AppendResponse(dst []byte, r *Response) ([]byte, error) {
	start := len(dst)
	b, err := appendResponse(dst, r)
	if err != nil {
		return dst[:start], err
	}
	return b, nil
}

func appendResponse(b []byte, r *Response) ([]byte, error) {
	if r.Status < 100 || r.Status > 999 {
		return b, ErrStatus
	}
	if r.Body != BodyNone && (r.Status < 200 || r.Status == 204) {
		return b, ErrFraming // RFC 9110 §8.6, §6.4.1
	}
	if r.Body == BodyLength && r.ContentLength < 0 {
		return b, ErrContentLen
	}
	reason := r.Reason
	if reason == "" {
		reason = http.StatusText(r.Status) // a constant: no allocation
	} else if !httpguts.ValidHeaderFieldValue(reason) {
		return b, ErrReason
	}
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, ' ')
	b = append(b, reason...)
	b = append(b, "\r\n"...)
	if r.Date != nil {
		if r.Checked&CheckedDate == 0 && !httpguts.ValidHeaderFieldValue(str(r.Date)) {
			return b, ErrFieldValue
		}
		b = appendField(b, "Date", r.Date)
	}
	if r.Checked&CheckedFields != 0 {
		for _, f := range r.Fields {
			b = appendField(b, str(f.Name), f.Value)
		}
	} else {
		for _, f := range r.Fields {
			if owned(f.Name, r) {
				return b, ErrFieldOwned
			}
		}
		var err error
		if b, err = appendFields(b, r.Fields); err != nil {
			return b, err
		}
	}
	switch r.Body {
	case BodyLength:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, r.ContentLength, 10)
		b = append(b, "\r\n"...)
	case BodyChunked:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	if r.Close {
		b = append(b, "Connection: close\r\n"...)
	} else if r.KeepAlive {
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	return append(b, "\r\n"...), nil
}

// owned reports whether the field name is one the Response writes itself.
func owned(name []byte, r *Response) bool {
	return EqualFold(name, "content-length") || EqualFold(name, "transfer-encoding") ||
		(r.Close || r.KeepAlive) && EqualFold(name, "connection") ||
		r.Date != nil && EqualFold(name, "date")
}

// appendFields appends the field lines, each checked.
func appendFields(b []byte, fields []Field) ([]byte, error) {
	for _, f := range fields {
		if !httpguts.ValidHeaderFieldName(str(f.Name)) {
			return b, ErrFieldName
		}
		if !httpguts.ValidHeaderFieldValue(str(f.Value)) {
			return b, ErrFieldValue
		}
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	return b, nil
}

func appendField(b []byte, name string, value []byte) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, value...)
	return append(b, "\r\n"...)
}

// AppendDate appends t as a Date value (IMF-fixdate, RFC 9110 §5.6.7:
// http.TimeFormat, in UTC). No allocation.
func AppendDate(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, http.TimeFormat)
}
