package httpd

import (
	"github.com/valkyria/aio/httpd/internal/h1"
	"golang.org/x/net/http2"
)

// Trailers of HTTP/2 requests: a HEADERS block after the body's DATA,
// with END_STREAM. Its fields go through the same filter and into the
// same storage as an HTTP/1.1 chunked body's (trailer.go), under the same
// bound (h1.DefaultMaxTrailer), so that Request.Trailer answers alike
// for both.

// trailerIn ends st's body with the trailer block f: its fields are kept
// in the request's arena before the end reaches the handler (dispatch, or
// OnData's last call). A block past the bound resets the stream: the
// handler may have started, so no 431 can be its answer.
func (h *h2conn) trailerIn(st *h2stream, f *h2block) {
	r := st.r
	if r == nil || st.reset || r.body.done { // nobody will read it
		h.bodyIn(st, nil, true)
		return
	}
	if f.truncated || f.size > h1.DefaultMaxTrailer {
		h.ls.st.badRequests.Add(1)
		h.resetStream(st.id, http2.ErrCodeProtocol)
		return
	}
	if st.buffering {
		// The body's room goes back first: setTrailer takes from the
		// arena, and shrink gives back only the last take.
		r.body.data = r.arena.shrink(r.body.data)
	}
	ls := h.ls
	ls.tbuf, ls.tfields = ls.tbuf[:0], ls.tfields[:0]
	for _, hf := range f.fields {
		ls.keepTrailerField(hf.Name, hf.Value)
	}
	r.setTrailer()
	h.bodyIn(st, nil, true)
}
