package httpd

// MaxBytesHandler returns a handler that runs h with its request's body
// limited to n bytes (n < 0 counts as 0: only an empty body), as
// net/http's MaxBytesHandler: for a route that takes less than the
// Server's MaxBodyBytes (a JSON API beside an upload route), or for any
// route when MaxBodyBytes is 0. A limit above MaxBodyBytes, or above the
// limit of a MaxBytesHandler h is already behind, changes nothing: the
// lowest holds.
//
// When h would start, a body known to be over n is refused at once, and
// h does not run: its Content-Length is over n, or the body that arrived
// with the request is (Bytes), or, for a streamed body without a length,
// what has arrived of it. The answer is 413, and the rest of a streamed
// body is not read (see Body: on HTTP/1.1 the connection closes after
// the answer; on HTTP/2 the stream is reset with NO_ERROR). The request
// counts in Requests, as one its handler answered.
//
// A body without a length that outgrows n later, while h reads it, is
// refused as one over MaxBodyBytes is (see Config): h's handle is
// cancelled, with an *http.MaxBytesError of limit n as its context's
// cause, and 413 is the answer in its place, unless its response has
// begun, which is then cut short.
//
// A Mux that routes to a MaxBytesHandler, and the Server, see through it
// to a Duplex h. A nil h panics at once.
func MaxBytesHandler(h Handler, n int64) Handler {
	if h == nil {
		panic("httpd: MaxBytesHandler of a nil handler")
	}
	return maxBytes{h: h, n: max(n, 0)}
}

// maxBytes is a MaxBytesHandler.
type maxBytes struct {
	h Handler
	n int64
}

// ServeAIO lowers r's body limit to m.n and runs m.h, or answers 413 when
// the body is over it already.
func (m maxBytes) ServeAIO(r *Request) Reply {
	if !r.limitBody(m.n) {
		r.cancelFor(maxBytesCause(m.n))
		return Reply{resp: errResponse(413)}
	}
	return m.h.ServeAIO(r)
}

// limitBody lowers r's body limit to n, and reports false when what is
// known of the body is over it: its length, its buffered bytes, or what
// has arrived of a streamed body without a length. On the loop.
func (r *Request) limitBody(n int64) bool {
	if n >= r.bodyLimit {
		return true // the body is within a lower limit already
	}
	r.bodyLimit = n
	b := &r.body
	switch {
	case b.length > n:
		return false
	case b.buffered || b.length >= 0:
		return int64(len(b.data)) <= n
	case r.h2s != nil:
		return r.h2s.received <= n
	default:
		return r.dec.Limit(n)
	}
}
