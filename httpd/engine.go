package httpd

import (
	"net/netip"

	"github.com/valkyria/aio"
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
	// connScope is the connection's scope: the handles of its requests
	// are adopted there.
	connScope() *aio.Scope
	remoteAddr() netip.AddrPort
}

// serveRequest calls the handler, and reports false if it panicked.
func serveRequest(hd Handler, r *Request) (reply Reply, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
		}
	}()
	return hd.ServeAIO(r), true
}

// adoptReply takes hd, the handle r's handler replied with: it is counted
// pending, adopted into the connection's scope sc, and its end, a cleanup
// on it, calls ended(r, seq) on ls's loop (the engine's handleEnded, which
// ignores a request that has moved on). On the loop.
func (ls *loopState) adoptReply(sc *aio.Scope, r *Request, hd *aio.Handle[Response], ended func(*Request, uint64)) {
	r.h = hd
	ls.st.handlersPending.Add(1)
	aio.Adopt(sc, hd)
	seq := r.seq
	if hd.Loop() == ls.l {
		hd.OnCleanup(func() { ended(r, seq) })
	} else { // a handle of another loop: its cleanup runs there
		hd.OnCleanup(func() {
			if ls.l.Post(func() { ended(r, seq) }) != nil {
				ended(r, seq) // the loop is gone: Post refuses, nothing races
			}
		})
	}
}
