package httpd

import (
	"fmt"
	"math"

	"github.com/valkyria/aio/httpd/internal/route"
)

// Handler answers requests. ServeAIO runs on the request's loop and must
// not block: it returns an immediate Reply, or Later(h) for a response that
// arrives later (a timer, Work, a Do body, another server). A panic in it
// is answered with 500 and the loop goes on.
type Handler interface {
	ServeAIO(r *Request) Reply // on r's loop
}

// HandlerFunc is a function as a Handler.
type HandlerFunc func(r *Request) Reply

// ServeAIO calls f(r).
func (f HandlerFunc) ServeAIO(r *Request) Reply { return f(r) }

// Mux routes requests to handlers by the patterns of net/http's ServeMux
// (Go 1.22): "[METHOD ][HOST]/[PATH]" with {name} and {name...} wildcards,
// {$}, subtrees ending in '/', precedence by specificity, and the same 404,
// 405 (with Allow), 307 redirects (unclean paths, a missing trailing slash)
// and 400 for "*" (the Server answers "OPTIONS *" before its Handler: see
// Config.DisableGeneralOptionsHandler). GET patterns match HEAD too.
// Matching allocates nothing.
//
// Register every pattern before the server starts: Handle and HandleFunc
// are not safe to call while requests are served.
type Mux struct {
	r route.Router[Handler]
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return new(Mux) }

// Handle registers h for pattern. It panics, as ServeMux does, when the
// pattern is invalid or conflicts with one registered before.
func (m *Mux) Handle(pattern string, h Handler) {
	if h == nil {
		panic(fmt.Sprintf("httpd: nil handler for pattern %q", pattern))
	}
	if err := m.r.Handle(pattern, h); err != nil {
		panic("httpd: " + err.Error())
	}
}

// HandleFunc registers fn for pattern, as Handle does.
func (m *Mux) HandleFunc(pattern string, fn func(r *Request) Reply) {
	if fn == nil {
		panic(fmt.Sprintf("httpd: nil handler for pattern %q", pattern))
	}
	m.Handle(pattern, HandlerFunc(fn))
}

// ServeAIO routes r: the matched handler answers it, or the Mux answers
// 404, 405, 307 or 400 as ServeMux would. On the loop.
func (m *Mux) ServeAIO(r *Request) Reply {
	h, kind := r.matchH, r.matchKind
	if r.matchedBy != m { // not routed at the head by this Mux (routeAtHead): the common case
		h, kind = m.r.Match(r.head.Method, r.head.Host, r.matchPath(), &r.params)
		if r.matchedBy != nil {
			r.matchedBy = nil // a Mux it routes to matched at the head; the params are this one's now
		}
	}
	switch kind {
	case route.Found:
		r.routed = true
		return h.ServeAIO(r)
	case route.MethodNotAllowed:
		r.hdr[0] = Field{"Allow", bytesStr(r.params.Allow())}
		r.hdr[1] = textHeader[0]
		return Reply{resp: Response{Status: 405, Header: r.hdr[:2], Body: strBytes(statusBody(405))}}
	case route.Redirect:
		loc := r.params.Redirect()
		if r.head.Query != nil {
			b := r.arena.Alloc(len(loc) + 1 + len(r.head.Query))
			n := copy(b, loc)
			b[n] = '?'
			copy(b[n+1:], r.head.Query)
			loc = b
		}
		r.hdr[0] = Field{"Location", bytesStr(loc)}
		return Reply{resp: Response{Status: 307, Header: r.hdr[:1]}}
	default:
		return Reply{resp: errResponse(kind.Status())}
	}
}

// match routes r at its head (routeAtHead) and keeps what it found, for
// ServeAIO to take instead of routing again.
func (m *Mux) match(r *Request) (Handler, route.Kind) {
	r.matchedBy = m
	r.matchH, r.matchKind = m.r.Match(r.head.Method, r.head.Host, r.matchPath(), &r.params)
	return r.matchH, r.matchKind
}

// Duplex returns h as a handler that starts as soon as its request's head
// has been read, rather than once a body small enough to arrive with the
// request (Body) has: with a body that came whole with its head (a small
// POST, read at once) Bytes has it; else the handler starts with what was
// read with the head and the body streams to OnData (Bytes reports
// false). For a stream whose client waits for the response, or for parts of
// it, before it sends the rest of its body (a bidirectional stream, as
// gRPC's, or Go's HTTP/1.1 client writing a body as it reads the
// response): client and handler would otherwise wait for each other until
// a timeout. On HTTP/1.1 this is for a chunked body (a client streaming
// both ways does not know its length): one of a declared length that fits
// the arena still arrives first, so that a handler that ignores it keeps
// the connection; and a response that begins before its request's body
// has been read whole says Connection: close, as what follows an unread
// body cannot be trusted to be the next request. A Duplex handler takes effect as the
// Server's Handler, or as one a Mux that is the Server's Handler routes to
// (through Muxes it routes to in turn, and through MaxBytesHandlers), not
// behind a handler of another kind (a middleware must be Duplex itself).
// FromHTTP's handlers are Duplex, as net/http's HTTP/2 handlers start at the
// head. A nil h panics at once.
func Duplex(h Handler) Handler {
	if h == nil {
		panic("httpd: Duplex of a nil handler")
	}
	return duplex{h}
}

// duplex is a Duplex handler.
type duplex struct{ Handler }

// routeAtHead follows r's route from the Server's Handler through the
// Muxes (which keep their match, see match) and MaxBytesHandlers on it,
// and reports whether it ends at a Duplex handler, and the lowest body
// limit on the way. On the loop.
func (ls *loopState) routeAtHead(r *Request) (duplexEnd bool, limit int64) {
	limit = math.MaxInt64
	h := ls.srv.Handler
	for {
		switch x := h.(type) {
		case *Mux:
			mh, kind := x.match(r)
			if kind != route.Found {
				return duplexEnd, limit
			}
			h = mh
		case maxBytes:
			limit = min(limit, x.n)
			h = x.h
		case duplex:
			duplexEnd = true // and a limit may lie behind it
			h = x.Handler
		default:
			return duplexEnd, limit
		}
	}
}
