package httpd

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
)

// engine is what a protocol engine (HTTP/1.1 in h1conn.go, HTTP/2 in h2conn.go)
// does for the protocol-neutral Request, Body and Stream: one value per
// connection, all on its loop. The engine reads requests into arenas,
// calls the handler (dispatch), and sends the responses; the request side
// tells it what the handler did through these methods.
type engine interface {
	// streamWrite sends (or holds until its turn) p as the next bytes of
	// r's streamed body; streamEnd ends it; streamFull tells whether the
	// writer should pause.
	streamWrite(r *Request, p []byte) error
	streamEnd(r *Request)
	streamFull(r *Request) bool
	// bodyDemand: r's handler wants (more) body bytes: reading may go on.
	bodyDemand(r *Request)
	// handleEnded: r's handle has ended (loopState.endHandle), with v, or
	// err, or cancelled: the engine sends the response that follows (none
	// when cancelled) and releases r in its turn.
	handleEnded(r *Request, v Response, err error, cancelled bool)
	// inform sends r's interim response (Request.Inform), if the
	// protocol has a place for it now.
	inform(r *Request, status int, header []Field) error
	// conn is the connection: the handles of its requests are adopted
	// into its scope.
	conn() *aio.Conn
	remoteAddr() netip.AddrPort
	// tlsState is the connection's TLS state, ok false without TLS.
	tlsState() (state tls.ConnectionState, ok bool)
	// hijack hands r's connection to its handler (FromHTTP's Hijack), as
	// a net.Conn, or says why it cannot.
	hijack(r *Request) (net.Conn, error)
}

// serve calls the handler with r, counting the request; a panic is
// counted and answered 500. "OPTIONS *" (RFC 9110 §9.3.7: a question
// about the server, which no handler's route names) is answered here,
// an empty 200, as net/http's Server answers it (globalOptionsHandler),
// unless Config.DisableGeneralOptionsHandler. On the loop.
func (ls *loopState) serve(r *Request) (reply Reply) {
	ls.st.requests.Add(1)
	if r.head.Form == h1.FormAsterisk && r.Method() == "OPTIONS" && !ls.cfg.DisableGeneralOptionsHandler {
		return Reply{} // an empty 200: Content-Length: 0
	}
	defer func() {
		if v := recover(); v != nil {
			ls.st.panics.Add(1)
			if v == http.ErrAbortHandler {
				// net/http's way to cut a response in silence: no log,
				// no 500, the response aborted (endHandle).
				reply = Reply{h: aio.Fail[Response](r.Loop(), http.ErrAbortHandler)}
				return
			}
			ls.logPanic(r, v, debug.Stack())
			reply = Reply{resp: errResponse(500)}
		}
	}()
	return ls.srv.Handler.ServeAIO(r)
}

// logFailure counts and logs the failure of r's handle, which answers
// 500 (or cuts the response): the client sees no more than that, so the
// error goes to ErrorLog. A panic (in a continuation, or a FromHTTP
// handler) is counted and logged as serve does a handler's own, but for
// http.ErrAbortHandler, which net/http's handlers panic with to cut a
// response in silence; any other failure counts in Failed. A Stream's
// refused head was logged as it was refused (streamState.refuse). On the
// loop.
func (ls *loopState) logFailure(r *Request, err error) {
	var pe *aio.PanicError
	if !errors.As(err, &pe) {
		if aborted(err) {
			return // a handler's own panic with it: counted by serve
		}
		ls.st.failed.Add(1)
		if r.stream.refused == nil || !errors.Is(err, r.stream.refused) {
			ls.srv.logf("httpd: %s %s: the handler's handle failed: %v", r.Method(), r.Target(), err)
		}
		return
	}
	ls.st.panics.Add(1) // as the handler's own (serve)
	if !errors.Is(err, http.ErrAbortHandler) {
		ls.logPanic(r, pe.Value, pe.Stack)
	}
}

// aborted reports whether err, a handle's failure, is a panic with
// http.ErrAbortHandler: net/http's handlers (httputil.ReverseProxy when
// its backend breaks off) panic with it to abort the response, and the
// client must see it cut, not a whole 500 (or a body that just ends).
func aborted(err error) bool { return errors.Is(err, http.ErrAbortHandler) }

// logPanic logs a panic of r's handler, or of work it started, with the
// stack it happened on. On the loop.
func (ls *loopState) logPanic(r *Request, v any, stack []byte) {
	ls.srv.logf("httpd: panic serving %s %s: %v\n%s", r.Method(), r.Target(), v, stack)
}

// logRefused logs a response the engine refused to send as made (why:
// the field or length at fault); a 500 goes in its place. On the loop.
func (ls *loopState) logRefused(r *Request, why string) {
	ls.srv.logf("httpd: response to %s %s refused: %s", r.Method(), r.Target(), why)
}

// dropReply ends a reply the engine cannot send (a Stream's head went out
// first): a handle is cancelled, as nothing will take its outcome, and
// the request has no handle left to wait for. On the loop.
func dropReply(r *Request, reply Reply) {
	if reply.h != nil {
		reply.h.Cancel()
		// The request ends once the handle has, and a Work job's fn has
		// returned (see Arena): through endHandle, as any reply's.
		r.ls.adoptReply(r, reply.h)
	} else {
		r.hdone = true
	}
	if reply.h != nil {
		if _, err := reply.h.Result(); aborted(err) {
			return // http.ErrAbortHandler: cut in silence, as asked
		}
	}
	what := "the response is cut"
	if r.stream.ended {
		what = "the Stream, whole, is the response"
	}
	r.ls.srv.logf("httpd: %s %s: a Stream went out, and the handler replied with something else: %s",
		r.Method(), r.Target(), what)
}

// adoptReply takes hd, the handle r's handler replied with: it is counted
// pending and adopted into the connection's scope, and its end runs
// endHandle on ls's loop. On the loop.
//
// The end is a Bracket's release, not a cleanup on hd: a Work job's handle
// cancelled (its client gone) ends at once while its fn runs on, and the
// fn may use the request's arena (see Arena) until it returns; a Bracket
// whose use is that handle releases only then. It also brings a handle of
// another loop's end to this loop, and runs it if this loop stops first.
func (ls *loopState) adoptReply(r *Request, hd *aio.Handle[Response]) {
	r.h = hd
	ls.st.handlersPending.Add(1)
	if r.ctxEnd != nil {
		r.endContextWith(hd)
	}
	aio.Adopt(r.eng.conn().Scope(), hd)
	if r.scopeH != nil {
		r.endScopeWith(hd)
	}
	aio.Bracket(aio.Pure(ls.l, r.seq),
		func(seq uint64) { ls.endHandle(r, seq) },
		func(uint64) *aio.Handle[Response] { return hd })
}

// endHandle ends r once its handle has (adoptReply's Bracket): the
// handle is done with (its count, its outcome), then the engine sends
// what it answers. A request
// that has moved on (another seq, or already ended) is left alone. On the
// loop.
func (ls *loopState) endHandle(r *Request, seq uint64) {
	if r.seq != seq || r.hdone {
		return
	}
	ls.st.handlersPending.Add(-1)
	hd := r.h
	r.h, r.hdone = nil, true
	v, err := hd.Result()
	cancelled := hd.Status() == aio.Cancelled
	if cancelled {
		ls.st.cancelled.Add(1)
	} else if err != nil {
		ls.logFailure(r, err)
	}
	r.eng.handleEnded(r, v, err, cancelled)
}

// openRequest starts r, a request of eng, under the next seq, and counts
// its stream open. On the loop.
func (ls *loopState) openRequest(r *Request, eng engine) {
	ls.seq++
	r.start(eng, ls.seq)
	ls.st.streamsOpen.Add(1)
}

// closeRequest ends r once its engine is done with it: its scope closes,
// its stream is counted closed, and its arena goes back. On the loop.
func (ls *loopState) closeRequest(r *Request) {
	r.endScope()
	ls.st.streamsOpen.Add(-1)
	ls.release(r)
}

// suppress counts r's response as not sent, once, and marks it written:
// nothing will be. On the loop.
func (ls *loopState) suppress(r *Request) {
	if !r.written {
		r.written = true
		ls.st.suppressed.Add(1)
	}
}
