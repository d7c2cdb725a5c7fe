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
