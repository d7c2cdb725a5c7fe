package httpd

import (
	"context"
	"crypto/tls"
	"iter"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unsafe"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
	"github.com/valkyria/aio/httpd/internal/route"
)

// Request is an HTTP request being served. Its strings and byte slices are
// views into the request's Arena, not copies: they are valid until the
// request ends (its response is written and its handle, if any, has
// finished), after which the Request and its arena serve another request.
// Copy what must live longer (strings.Clone). The same holds for the
// Request itself: work that may outlive the request (a timer, a
// goroutine's Post) must not use it, and is best adopted into Scope, which
// cancels it when the request ends. Scope, Context, a Body and a Stream
// are safe late: they are closed, done, empty and closed by then. A Work
// job whose handle is the handler's reply counts as running until its fn
// returns, even once cancelled (see Arena), so its fn may use the views it
// was given; one inside another handle may run on after the request ended.
//
// A Request belongs to its loop: call its methods on the loop (in the
// handler, in continuations of handles on that loop), except Context,
// whose context any goroutine may use.
type Request struct {
	ls  *loopState // immutable once made
	idx int        // the slab slot: immutable

	// Owned by the loop; set by the engine for each request.
	eng    engine
	buf    []byte // the arena's block, made on first use and kept
	arena  Arena
	head   h1.Head // every slice points into buf
	params route.Params
	hdr    [2]Field // the Mux's own answers' fields
	body   bodyState
	stream streamState
	dec    h1.ChunkedDecoder // a chunked body's
	routed bool              // params hold a Mux match
	// The Mux that routed the request at its head (Mux.match), and what
	// it found; matchH and matchKind mean nothing while matchedBy is nil.
	matchedBy *Mux
	matchH    Handler
	matchKind route.Kind
	// trailer is the body's trailer (trailer.go, h2trailer.go): views into the
	// arena, once the body has ended.
	trailer []h1.Field

	// The request's scope, made by Scope on first use.
	scope  *aio.Scope
	scopeP *aio.Promise[struct{}]
	scopeH *aio.Handle[struct{}]
	// The request's context (Context) and why it was cancelled (cause.go),
	// made on first use.
	ctx    context.Context
	ctxEnd func(other error)
	why    *cancelCause

	// Engine state of the request (h1conn.go).
	next     *Request              // the connection's queue of requests
	resp     Response              // the response to send, once replied
	h        *aio.Handle[Response] // the handler's handle, while it runs
	h2s      *h2stream             // the HTTP/2 stream, until the request ends (h2stream.go)
	seq      uint64                // the request's number on its loop: tells a stale cleanup
	replied  bool                  // resp is set (or the request ends without one: gone)
	written  bool                  // the response is written, or will never be
	hdone    bool                  // no handle, or it has finished
	gone     bool                  // the client went away: nothing is sent
	expect   bool                  // 100 Continue is still to be sent before the body
	isHead   bool                  // HEAD: no body is written
	upgrade  bool                  // HTTP/1.1: it asks to switch protocols (Upgrade, or CONNECT): nothing behind it is parsed (pipelineFull)
	closeAf  bool                  // the connection closes after this response
	released bool                  // the arena went back: the Request waits in the slab
	refusal  int                   // the status refusing a body that outgrew MaxBodyBytes as it streamed: the answer in the handler's place
	// bodyLimit bounds the body: MaxBodyBytes (MaxInt64 for none), or
	// lower once a MaxBytesHandler has run (maxbytes.go).
	bodyLimit int64
}

// start readies r, fresh from the slab, for a request of eng.
func (r *Request) start(eng engine, seq uint64) {
	r.eng, r.seq = eng, seq
	r.arena.reset(r.buf)
	r.routed = false
	r.matchedBy = nil
	r.next, r.resp, r.h = nil, Response{}, nil
	r.replied, r.written, r.hdone, r.gone = false, false, false, false
	r.expect, r.isHead, r.closeAf, r.released, r.upgrade = false, false, false, false, false
	r.refusal = 0
	r.bodyLimit = r.ls.maxBody
	r.ctx, r.ctxEnd, r.why = nil, nil, nil
	r.body = bodyState{r: r}
	clear(r.trailer)
	r.trailer = r.trailer[:0]
	r.stream = streamState{r: r, pend: r.stream.pend[:0]}
}

// forget drops what r's handler left in it, as its arena goes back: its
// response (a body made on the heap), its body's reader, its stream's
// callback, header and trailer. The slab keeps the Request until a request
// takes its slot again, which, the free slots being taken last in first
// out, a slot reached only at a peak of load may not see until the next
// one. What start resets besides is the engine's, or views of the arena.
func (r *Request) forget() {
	// The engine is the connection's: the slot must not keep it (a closed
	// connection, its aio.Conn, TLS state, HTTP/2 framer and tables) until
	// a request takes the slot again. start sets the next one.
	r.eng = endedEngine{}
	r.resp = Response{}
	r.body.fn = nil
	r.matchH = nil
	s := &r.stream
	s.handle, s.onDrain, s.hdr, s.trailer, s.refused = nil, nil, nil, nil, nil
}

// endedEngine is the engine of a Request whose request has ended (forget):
// it answers as for a connection that has gone, and holds none. Only a
// Request used late (which Request's doc rules out) reaches it: a Stream
// and a Body check that their request lives first.
type endedEngine struct{}

func (endedEngine) streamWrite(*Request, []byte) error             { return ErrStreamClosed }
func (endedEngine) streamEnd(*Request)                             {}
func (endedEngine) streamFull(*Request) bool                       { return false }
func (endedEngine) bodyDemand(*Request)                            {}
func (endedEngine) handleEnded(*Request, Response, error, bool)    {}
func (endedEngine) inform(*Request, int, []Field) error            { return ErrClientGone }
func (endedEngine) conn() *aio.Conn                                { return nil }
func (endedEngine) remoteAddr() netip.AddrPort                     { return netip.AddrPort{} }
func (endedEngine) tlsState() (state tls.ConnectionState, ok bool) { return state, false }
func (endedEngine) hijack(*Request) (net.Conn, error)              { return nil, ErrClientGone }

// live reports whether r is still the request numbered seq: it has not
// ended, and its Request has not gone back to the slab or on to another
// request. For work posted to the loop that may run after the end.
func (r *Request) live(seq uint64) bool { return r.seq == seq && !r.released }

// Method returns the request method, as sent ("GET").
func (r *Request) Method() string { return bytesStr(r.head.Method) }

// Target returns the request-target as sent ("/users/7?x=1").
func (r *Request) Target() string { return bytesStr(r.head.Target) }

// Path returns the path of the target as sent, still %-escaped ("/" for
// an absolute-form target without a path).
func (r *Request) Path() string {
	if len(r.head.Path) == 0 {
		return "/"
	}
	return bytesStr(r.head.Path)
}

// matchPath is the path the router matches.
func (r *Request) matchPath() []byte {
	if len(r.head.Path) == 0 {
		return slash
	}
	return r.head.Path
}

var slash = []byte("/")

// RawQuery returns the query of the target, without its '?', still
// %-escaped; "" when there is none.
func (r *Request) RawQuery() string { return bytesStr(r.head.Query) }

// Query returns the first value of the query parameter name, unescaped
// (url.QueryUnescape), and "" when there is none. The query is read again
// at each call, without allocating unless a value must be unescaped (into
// the arena).
func (r *Request) Query(name string) string {
	q := bytesStr(r.head.Query)
	for q != "" {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		if !strings.ContainsAny(k, "%+") {
			if k != name {
				continue
			}
		} else if uk, err := url.QueryUnescape(k); err != nil || uk != name {
			continue
		}
		if !strings.ContainsAny(v, "%+") {
			return v
		}
		u, err := url.QueryUnescape(v)
		if err != nil {
			return ""
		}
		return r.arenaString(u)
	}
	return ""
}

// arenaString copies s into the arena when it has room, so that the copy
// lives as the request's other strings do.
func (r *Request) arenaString(s string) string {
	if len(s) > r.arena.Room() {
		return s
	}
	b := r.arena.take(len(s))
	copy(b, s)
	return bytesStr(b)
}

// Header returns the value of the first header field called name (ASCII
// case-insensitive), "" if there is none.
func (r *Request) Header(name string) string {
	v, _ := r.head.Get(name)
	return bytesStr(v)
}

// HeaderValues yields the value of every field called name, in order.
func (r *Request) HeaderValues(name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for v := range r.head.Values(name) {
			if !yield(bytesStr(v)) {
				return
			}
		}
	}
}

// Headers yields every header field, name as sent and value, in order.
func (r *Request) Headers() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, f := range r.head.Fields {
			if !yield(bytesStr(f.Name), bytesStr(f.Value)) {
				return
			}
		}
	}
}

// Host returns the host the request is for: the target's authority, or the
// Host field.
func (r *Request) Host() string { return bytesStr(r.head.Host) }

// Proto returns the protocol version, "HTTP/1.1", "HTTP/1.0" or
// "HTTP/2.0".
func (r *Request) Proto() string { return bytesStr(r.head.Proto) }

// ProtoMinor returns the minor version of HTTP/1.x: 0 or 1 (0 for
// HTTP/2.0).
func (r *Request) ProtoMinor() int { return r.head.Minor }

// PathValue returns the value of the wildcard name of the pattern that
// matched (Mux), unescaped; "" when there is none.
func (r *Request) PathValue(name string) string {
	if !r.routed {
		return ""
	}
	v, _ := r.params.Get(name)
	return bytesStr(v)
}

// Pattern returns the Mux pattern that matched, "" without one.
func (r *Request) Pattern() string {
	if !r.routed {
		return ""
	}
	return r.params.Pattern()
}

// RemoteAddr returns the client's address.
func (r *Request) RemoteAddr() netip.AddrPort { return r.eng.remoteAddr() }

// Loop returns the loop the request is served on.
func (r *Request) Loop() *aio.Loop { return r.ls.l }

// Arena returns the request's arena, for building the response.
func (r *Request) Arena() *Arena { return &r.arena }

// Body returns the request's body: a value naming this request, so that
// one kept past it does not reach the next request in its slot (see Body).
func (r *Request) Body() Body { return Body{r: r, seq: r.seq} }

// Scope returns the request's scope: handles adopted into it are cancelled
// when the request ends, or when the client goes away before (a timer
// feeding a Stream, say). It is made on the first call (an allocation the
// fast path does not make). On the loop.
func (r *Request) Scope() *aio.Scope {
	if r.released {
		return r.ls.closedScope() // late: what is adopted is cancelled, not left to a scope nothing closes
	}
	if r.scope == nil {
		l := r.ls.l
		p := aio.NewPromise[struct{}](l)
		h := aio.WithScope(l, func(s *aio.Scope) *aio.Handle[struct{}] {
			r.scope = s
			return p.Handle()
		})
		r.scopeP, r.scopeH = p, h
		aio.Adopt(r.eng.conn().Scope(), h)
		if r.h != nil {
			r.endScopeWith(r.h)
		}
	}
	return r.scope
}

// endScopeWith cancels r's Scope when hd, its handler's handle, is
// cancelled (its client gone): at once, not when the request ends, which
// for a Work reply waits for its fn to return (see Arena). On the loop.
func (r *Request) endScopeWith(hd *aio.Handle[Response]) {
	ls, seq, sh := r.ls, r.seq, r.scopeH
	end := func() {
		if r.seq == seq && !r.released {
			sh.Cancel()
		}
	}
	if hd.Loop() == ls.l {
		hd.OnCancel(end)
	} else {
		hd.OnCancel(func() { _ = ls.l.Post(end) })
	}
}

// Context returns a context that is done when the request ends or its
// Scope is cancelled (the client went away), for goroutine code (Work, a
// library that takes a context). context.Cause tells why it is done:
// context.Canceled when the request ended as usual; ErrClientGone (with
// the connection's error, if any) when the client went away; ErrServerClosed
// when Server.Shutdown's deadline closed the connection; an
// *http.MaxBytesError or ErrBadBody when the body was refused as it
// streamed (413, 400); aio.ErrStopped when the loop stopped;
// aio.ErrCancelled when the program cancelled the handler's handle.
// errors.Is finds context.Canceled in every cause too, as in the context's
// Err: code written for net/http, where that is the only cause, tests it
// on what its calls return (net/http's client returns the cause). It is
// made on the first call (allocations the fast path does not make). Call
// it on the loop; the context may be used from any goroutine.
func (r *Request) Context() context.Context {
	if r.released {
		return endedContext // late: the request has ended
	}
	if r.ctx == nil {
		r.Scope()
		r.ctx, r.ctxEnd = causeContext(r.cause())
		end := r.ctxEnd
		r.scopeH.OnCancel(func() { end(aio.ErrCancelled) })
		if r.h != nil {
			r.endContextWith(r.h)
		}
	}
	return r.ctx
}

// endContextWith ends r's context when hd, its handler's handle, is
// cancelled: in an OnCancel, which runs before hd's continuations, so a
// Finally of hd finds the context done and its cause said, whichever of
// the request's handles the connection's scope cancels first. On the loop.
func (r *Request) endContextWith(hd *aio.Handle[Response]) {
	end := r.ctxEnd
	hd.OnCancel(func() { end(aio.ErrCancelled) })
}

// endedContext is the Context of a request that has ended.
var endedContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// endScope closes the request's scope, if it has one: what it adopted is
// cancelled, and its context is done.
func (r *Request) endScope() {
	if r.ctxEnd != nil {
		r.ctxEnd(context.Canceled)
		r.ctx, r.ctxEnd = nil, nil
	}
	r.why = nil
	if r.scopeP != nil {
		r.scopeP.Resolve(struct{}{})
		r.scope, r.scopeP, r.scopeH = nil, nil, nil
	}
}

// rebase points the slice s, a view into from, at the same bytes in to
// (a copy of from). A slice not in from is returned unchanged.
func rebase(s, from, to []byte) []byte {
	if s == nil || len(from) == 0 {
		return s
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(s))) - uintptr(unsafe.Pointer(unsafe.SliceData(from)))
	if off > uintptr(len(from)) || off+uintptr(len(s)) > uintptr(len(from)) {
		return s
	}
	return to[off : int(off)+len(s) : int(off)+len(s)]
}

// setHead copies the head src, parsed from raw, into the request: raw
// goes into the arena and every slice of the head is made to point there.
func (r *Request) setHead(src *h1.Head, raw []byte) {
	dst := r.arena.take(len(raw))
	copy(dst, raw)
	fields := slices.Grow(r.head.Fields[:0], len(src.Fields))[:len(src.Fields)]
	r.head = *src
	r.head.Method = rebase(src.Method, raw, dst)
	r.head.Target = rebase(src.Target, raw, dst)
	r.head.Proto = rebase(src.Proto, raw, dst)
	r.head.Path = rebase(src.Path, raw, dst)
	r.head.Query = rebase(src.Query, raw, dst)
	r.head.Host = rebase(src.Host, raw, dst)
	for i := range fields { // by index, into room made once: no append's check, no copy of each field
		f := &src.Fields[i]
		fields[i] = h1.Field{Name: rebase(f.Name, raw, dst), Value: rebase(f.Value, raw, dst)}
	}
	r.head.Fields = fields
}
