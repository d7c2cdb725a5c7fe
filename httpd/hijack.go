package httpd

import (
	"errors"
	"net"
	"net/http"
)

// Hijack: a FromHTTP handler takes its HTTP/1.1 connection over, as
// net/http's Hijacker lets it (a WebSocket library after its 101, a
// CONNECT tunnel). The connection leaves the server: it is no longer
// counted, timed, drained or closed by it (net/http's Shutdown does not
// track a hijacked connection either), and the handler has it as the
// connection's NetConn view (aio.Conn.NetConn), whose Close closes it.

// errHijackLost is why a connection whose bytes after the request were
// read as HTTP and refused, or dropped, is not handed over: the handler
// would get the stream with a hole in it. (A request that asks to switch
// protocols, Upgrade or CONNECT, holds what follows it unread.)
var errHijackLost = errors.New("httpd: Hijack: what the client sent after the request was read as HTTP and refused")

// errHijackState is why a request's connection cannot be taken over now.
var errHijackState = errors.New("httpd: Hijack: not the connection's only request, or its body or response under way")

// hijack hands r's connection to r's handler, on the loop: r must be the
// connection's only request, its body read and its response not begun,
// as a handler that answers with its own protocol is (net/http's hijacks
// only while its one request is served). r is taken off the queue as
// written, so that nothing is sent for it, and the connection leaves the
// loop's books as its close would take it off them; its handle still
// ends r (its arena comes back then).
func (hc *h1conn) hijack(r *Request) (net.Conn, error) {
	switch {
	case hc.closed || hc.aborted || hc.finished:
		return nil, ErrClientGone
	case hc.qhead != r || r.next != nil || hc.cur != nil || r.stream.p != nil || r.replied:
		return nil, errHijackState
	case hc.errStatus != 0 || hc.discarded > 0:
		// What followed r was read as HTTP and refused, or dropped: the
		// stream the handler would get has a hole in it.
		return nil, errHijackLost
	}
	hc.pop(r)
	hc.closed = true // the engine is done with the connection: nothing is sent, timed or drained
	_ = hc.c.SetReadTimeout(0)
	_ = hc.c.SetWriteTimeout(0) // Config.WriteTimeout is the server's: net/http clears the deadlines on Hijack too
	nc := hc.c.NetConn()        // takes the callbacks over; bytes read past r come first
	if hc.paused {
		hc.paused = false
		hc.c.ResumeRead()
	}
	hc.leaveLoop()
	return nc, nil
}

// hijack is refused on HTTP/2, as net/http refuses it: a stream is not a
// connection.
func (h *h2conn) hijack(*Request) (net.Conn, error) { return nil, http.ErrNotSupported }
