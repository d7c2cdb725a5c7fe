package httpd

import (
	"errors"
	"fmt"

	"github.com/valkyria/aio/httpd/internal/h1"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2/hpack"
)

// Trailers of responses: fields a Stream sends after its body
// (Stream.SetTrailer). HTTP/1.1 writes them in the last chunk, which is
// why a stream that has them is chunked even with a Content-Length (the
// choice is made when its head is written: a Trailer field in its header
// declares them in time); HTTP/2 writes them as a HEADERS block with
// END_STREAM after the last DATA.

// ErrTrailerField is what Stream.SetTrailer's error wraps for a field it
// refuses: an invalid name or value, or a field a trailer may not carry.
var ErrTrailerField = errors.New("httpd: field not allowed in a trailer")

// SetTrailer sets the trailer of the stream: fields sent after the body
// when End ends it, replacing those set before. The fields are kept until
// then (do not modify them; views into the request's Arena are fine). A
// field with an invalid name or value, or one that cannot come after the
// body (framing, routing, authentication, request controls and
// connection-specific fields, as net/http refuses them: Content-Length,
// Transfer-Encoding, Host, Trailer, Connection, Upgrade, Te, ...) is
// refused: the error wraps ErrTrailerField, and nothing is set. After End
// or once the client has gone away it returns ErrStreamClosed.
//
// On HTTP/1.1 the trailer goes in the last chunk: a stream whose header
// declares its trailer (a Trailer field), or whose trailer is set before
// its head is written, is chunked even if its header has a Content-Length.
// A body that is not chunked cannot carry one, and it is dropped: a
// client of HTTP/1.0, a head written with a Content-Length before the
// trailer was set or declared. On HTTP/2 it is a HEADERS frame that ends
// the stream. A response to HEAD has none.
//
// On the loop.
func (s *Stream) SetTrailer(fields []Field) error {
	st := s.state()
	if st == nil || st.closed() {
		return ErrStreamClosed
	}
	for _, f := range fields {
		if err := checkTrailerField(f); err != nil {
			return err
		}
	}
	st.trailer = fields
	return nil
}

// checkTrailerField says why f cannot be a response's trailer field, or
// nil.
func checkTrailerField(f Field) error {
	switch {
	case !httpguts.ValidHeaderFieldName(f.Name):
		return fmt.Errorf("%w: invalid name %q", ErrTrailerField, f.Name)
	case !httpguts.ValidHeaderFieldValue(f.Value):
		return fmt.Errorf("%w: invalid value of %q", ErrTrailerField, f.Name)
	case !trailerAllowed(f.Name):
		return fmt.Errorf("%w: %q", ErrTrailerField, f.Name)
	}
	return nil
}

// trailed reports whether the stream's body must be able to carry a
// trailer: it has one, or its header declares one.
func (s *streamState) trailed() bool { return s.declared || len(s.trailer) > 0 }

// endTrailer is the trailer to send after the body, once End was called:
// none for a response that is not the stream's.
func (s *streamState) endTrailer() []Field {
	if s.p == nil || !s.ended {
		return nil
	}
	return s.trailer
}

// writeLastChunk writes the end of a chunked stream: the last chunk with
// the stream's trailer.
func (hc *h1conn) writeLastChunk(s *streamState) {
	trailer := s.endTrailer()
	if len(trailer) == 0 {
		_, _ = hc.c.WriteString("0\r\n\r\n")
		return
	}
	ls := hc.ls
	fields := ls.fields[:0]
	for _, f := range trailer {
		fields = append(fields, h1.Field{Name: strBytes(f.Name), Value: strBytes(f.Value)})
	}
	buf, err := h1.AppendLastChunk(ls.wbuf[:0], fields)
	clear(fields) // keep no view of a response that ended
	ls.fields = fields[:0]
	if err != nil { // SetTrailer checked every field: not reached
		buf, _ = h1.AppendLastChunk(buf, nil)
	}
	_, _ = hc.c.Write(buf)
	ls.wbuf = buf[:0]
}

// writeTrailer ends st with its trailer: a HEADERS block of the fields
// (no pseudo-header), with END_STREAM. The fields go through the encoder
// itself, not the connection's cache of encoded fields: a trailer's
// values (checksums, statuses) would push out the fields that repeat.
func (h *h2conn) writeTrailer(st *h2stream, trailer []Field) {
	h.hb.b = h.hb.b[:0]
	for _, f := range trailer {
		name, _ := h.lower(f.Name) // SetTrailer checked it
		_ = h.enc.WriteField(hpack.HeaderField{Name: name, Value: f.Value})
	}
	h.writeBlock(st.id, true)
}
