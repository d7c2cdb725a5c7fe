package httpd

import (
	"errors"
	"strconv"
	"unsafe"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
)

// Field is one header field of a response: a name and a value, written as
// given (after a check that they cannot split the response). A slice of
// Fields kept in a package variable costs nothing per response.
type Field struct {
	Name, Value string
}

// Response is an HTTP response with its whole body in memory. The server
// writes it and does not modify or keep Header or Body: they may point into
// the request's Arena, or into memory shared by every response (a constant).
//
// Content-Length, Transfer-Encoding, Connection and Date are the server's:
// a Header holding one of them is refused (the client gets a 500). The
// answer to HEAD has the Content-Length of Body and no body (none if Body
// is empty and Header states none). A Header may hold one Content-Length
// field, a decimal integer, on a status with content (not 1xx, 204 or
// 304), if it states Body's length, or, in the answer to HEAD with an
// empty Body, any length: the one a GET would get (RFC 9110 §9.3.2),
// which a HEAD handler can tell without making the body. Any other
// Content-Length field is refused.
//
// Close ends the connection after the response, as a net/http handler's
// "Connection: close" does: on HTTP/1.1 the response says Connection:
// close, nothing after it is answered (a request pipelined behind it gets
// no response), and the connection closes, lingering; on HTTP/2 the
// server sends GOAWAY and lets the streams the client has opened finish.
type Response struct {
	Status int     // 200 to 999 (a final status); 0 means 200
	Header []Field // written in order
	Body   []byte  // sent as it is, not copied: it must not change until the response is written
	Close  bool    // end the connection after this response
}

// length returns the Content-Length of resp, with status (0 made 200),
// as the answer to r: its Body's, or, answering HEAD with no Body, the
// one its Content-Length field states (see Response), or -1 if it states
// none: no Content-Length is sent then (RFC 9110 §9.3.2 lets a HEAD's
// answer leave it out, and 0 could be wrong). false: a Content-Length
// field the server refuses.
func (r *Request) length(status int, resp *Response) (int64, bool) {
	n := int64(len(resp.Body))
	anyLength := r.isHead && n == 0
	stated := false
	for _, f := range resp.Header {
		if len(f.Name) != len("Content-Length") || !h1.EqualFold(strBytes(f.Name), "Content-Length") {
			continue
		}
		v, err := strconv.ParseUint(f.Value, 10, 63) // digits only: no sign
		if stated || err != nil || !hasContent(status) || int64(v) != n && !anyLength {
			return 0, false
		}
		n, stated = int64(v), true
	}
	if anyLength && !stated {
		return -1, true // a HEAD's GET may have a body: its length is not known
	}
	return n, true
}

// errBadLength is why a response whose Content-Length field is not its
// body's length (or is repeated, malformed, or on a status without
// content) is refused (Request.length).
var errBadLength = errors.New("its Content-Length is not its body's length")

// hasContent reports whether a response of status has content, and so a
// Content-Length (RFC 9110 §8.6; 304's may be left out, and is).
func hasContent(status int) bool {
	return status >= 200 && status != 204 && status != 304
}

// Reply is what a handler returns: either a Response to send at once (no
// handle is allocated: the fast path) or a handle of one, for a response
// that arrives later. Make one with Respond, Text, JSON, Bytes, Later or
// Stream.Reply. The zero Reply is an empty 200.
type Reply struct {
	resp Response
	h    *aio.Handle[Response] // nil: resp, at once
}

// Respond returns a Reply that sends resp at once. Any goroutine.
func Respond(resp Response) Reply { return Reply{resp: resp} }

// Later returns a Reply that sends the response h completes with, once it
// does. h is adopted into the connection's scope: a client that goes away
// cancels it (and, through it, its timers, Work and nested handles). A
// failed h sends 500. h may live on another loop. A nil h is a 500.
//
// A cancelled h sends nothing, whoever cancelled it: on HTTP/1.1 the
// connection closes (the responses queued after it could not be sent in
// order), on HTTP/2 the stream is reset (CANCEL). So a deadline meant to
// answer the client must fail h, not cancel it: aio.Within(h, d) fails
// with aio.ErrTimeout, which a Catch turns into a 504; a context bound
// with Bind, or Cancel, cancels. Not for a Stream's handle: a Stream
// replies with its own Reply (see Stream.Reply).
func Later(h *aio.Handle[Response]) Reply {
	if h == nil {
		return Reply{resp: errResponse(500)}
	}
	return Reply{h: h}
}

// Handle returns the handle of a Reply made by Later, nil for an immediate
// one.
func (r Reply) Handle() *aio.Handle[Response] { return r.h }

// Response returns the response of an immediate Reply (ok true), or false
// for a Reply made by Later.
func (r Reply) Response() (Response, bool) { return r.resp, r.h == nil }

// Header field lists of the helpers below, shared by every response.
var (
	textHeader  = []Field{textField}
	jsonHeader  = []Field{jsonField}
	octetHeader = []Field{octetField}
)

var (
	textField  = Field{"Content-Type", "text/plain; charset=utf-8"}
	jsonField  = Field{"Content-Type", "application/json"}
	octetField = Field{"Content-Type", "application/octet-stream"}
)

// ownLists are the server's own field lists, each with its field as made
// and that field as h1 takes it: valid, and not one the framing writes.
var ownLists = [...]struct {
	hdr []Field
	f   Field
	h1  []h1.Field
}{
	{textHeader, textField, h1Fields(textField)},
	{jsonHeader, jsonField, h1Fields(jsonField)},
	{octetHeader, octetField, h1Fields(octetField)},
}

func h1Fields(f Field) []h1.Field {
	return []h1.Field{{Name: []byte(f.Name), Value: []byte(f.Value)}}
}

// ownFields returns hdr as h1 fields when it is one of the server's own
// lists (Text, JSON, Bytes, the error responses) still as made, so that
// they are not checked again for every response; else nil. A handler can
// change a field of a shared list (a Response's Header is its to read,
// and could be written through): such a list is checked as any other.
func ownFields(hdr []Field) []h1.Field {
	if len(hdr) != 1 {
		return nil
	}
	for i := range ownLists {
		if o := &ownLists[i]; &hdr[0] == &o.hdr[0] && hdr[0] == o.f {
			return o.h1
		}
	}
	return nil
}

// Text returns an immediate Reply of status with body s as text/plain
// (UTF-8). s is not copied: no allocation. Any goroutine.
func Text(status int, s string) Reply {
	return Reply{resp: Response{Status: status, Header: textHeader, Body: strBytes(s)}}
}

// JSON returns an immediate Reply of status with body b as
// application/json. b is not copied (build it in the request's Arena).
// Any goroutine.
func JSON(status int, b []byte) Reply {
	return Reply{resp: Response{Status: status, Header: jsonHeader, Body: b}}
}

// Bytes returns an immediate Reply of status with body b as
// application/octet-stream. b is not copied. Any goroutine.
func Bytes(status int, b []byte) Reply {
	return Reply{resp: Response{Status: status, Header: octetHeader, Body: b}}
}

// TextResponse is Text as a Response, for a handle's value.
func TextResponse(status int, s string) Response {
	return Response{Status: status, Header: textHeader, Body: strBytes(s)}
}

// JSONResponse is JSON as a Response, for a handle's value.
func JSONResponse(status int, b []byte) Response {
	return Response{Status: status, Header: jsonHeader, Body: b}
}

// BytesResponse is Bytes as a Response, for a handle's value.
func BytesResponse(status int, b []byte) Response {
	return Response{Status: status, Header: octetHeader, Body: b}
}

// errResponse is the short text response of an error status.
func errResponse(status int) Response {
	return Response{Status: status, Header: textHeader, Body: strBytes(statusBody(status))}
}

// statusBody is the body of an error response: its reason phrase and a
// newline, a constant.
func statusBody(status int) string {
	switch status {
	case 400:
		return "400 Bad Request\n"
	case 404:
		return "404 page not found\n"
	case 405:
		return "405 Method Not Allowed\n"
	case 408:
		return "408 Request Timeout\n"
	case 413:
		return "413 Request Entity Too Large\n"
	case 414:
		return "414 URI Too Long\n"
	case 417:
		return "417 Expectation Failed\n"
	case 431:
		return "431 Request Header Fields Too Large\n"
	case 500:
		return "500 Internal Server Error\n"
	case 501:
		return "501 Not Implemented\n"
	case 503:
		return "503 Service Unavailable\n"
	case 505:
		return "505 HTTP Version Not Supported\n"
	}
	return "error\n"
}

// strBytes views s as bytes without a copy. The bytes must not be
// modified: the server only reads a response's body.
func strBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// bytesStr views b as a string without a copy: valid while b's bytes do
// not change.
func bytesStr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
