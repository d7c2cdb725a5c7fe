package httpd

import (
	"iter"

	"github.com/valkyria/aio/httpd/internal/h1"
	"golang.org/x/net/http/httpguts"
)

// Trailers of HTTP/1.1 chunked request bodies. The chunked decoder's
// fields are views into the read buffer, valid only while split looks at
// it: split copies them into the loop's scratch (keepTrailer), and the
// body's end moves them into the request's arena (setTrailer), from
// where Request.Trailer serves them until the request ends.

// keepTrailer copies fields, a chunked body's trailer that split has just
// decoded, into the loop's scratch, but for the fields a trailer may not
// carry. On the loop.
func (ls *loopState) keepTrailer(fields []h1.Field) {
	ls.tbuf, ls.tfields = ls.tbuf[:0], ls.tfields[:0]
	for _, f := range fields {
		ls.keepTrailerField(bytesStr(f.Name), bytesStr(f.Value))
	}
	ls.viewTrailer()
}

// keepTrailerField appends a trailer field to the loop's scratch unless
// a trailer may not carry it; viewTrailer ends the section. On the loop.
func (ls *loopState) keepTrailerField(name, value string) {
	if !trailerAllowed(name) {
		return
	}
	ls.tbuf = append(ls.tbuf, name...)
	ls.tbuf = append(ls.tbuf, value...)
	ls.tfields = append(ls.tfields, h1.Field{Name: strBytes(name), Value: strBytes(value)})
}

// trailerAllowed reports whether a trailer may carry the field called
// name, received or sent: not framing, routing, authentication, request
// controls and the like, which cannot come after the body (RFC 9110,
// 6.5.1: httpguts' list), nor Upgrade, connection-specific, which that
// list lets through.
func trailerAllowed(name string) bool {
	return httpguts.ValidTrailerHeader(name) && !h1.EqualFold(strBytes(name), "Upgrade")
}

// viewTrailer points the kept fields, until now the sender's bytes, at
// their copies in the scratch. On the loop.
func (ls *loopState) viewTrailer() { rebaseFields(ls.tfields, ls.tbuf) }

// rebaseFields points fields, in order, at their names and values laid
// end to end in b (as keepTrailerField lays them in the scratch).
func rebaseFields(fields []h1.Field, b []byte) {
	off := 0
	for i := range fields {
		f := &fields[i]
		n, v := len(f.Name), len(f.Value)
		f.Name, f.Value = b[off:off+n:off+n], b[off+n:off+n+v:off+n+v]
		off += n + v
	}
}

// setTrailer moves the trailer kept in the loop's scratch into r's arena
// (the heap if the arena has no room left). On the loop, at the body's
// end.
func (r *Request) setTrailer() {
	ls := r.ls
	if len(ls.tfields) == 0 {
		return
	}
	b := r.arena.Alloc(len(ls.tbuf))
	copy(b, ls.tbuf)
	n := len(r.trailer)
	r.trailer = append(r.trailer, ls.tfields...)
	rebaseFields(r.trailer[n:], b)
	clear(ls.tfields)
	ls.tfields, ls.tbuf = ls.tfields[:0], ls.tbuf[:0]
}

// Trailer returns the value of the first trailer field called name
// (case-insensitive), or "": the fields a chunked HTTP/1.1 body sent after
// its last chunk, or an HTTP/2 request's trailer HEADERS. They are known once the whole body has arrived: for a
// body that streams, after OnData's last call. Views into the arena, as
// the head's are.
func (r *Request) Trailer(name string) string {
	for _, f := range r.trailer {
		if h1.EqualFold(f.Name, name) {
			return bytesStr(f.Value)
		}
	}
	return ""
}

// Trailers yields every trailer field, name as sent and value, in order
// (see Trailer).
func (r *Request) Trailers() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, f := range r.trailer {
			if !yield(bytesStr(f.Name), bytesStr(f.Value)) {
				return
			}
		}
	}
}
