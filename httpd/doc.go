// Package httpd is an HTTP/1.1 and HTTP/2 server on aio loops (h2c, and
// HTTPS with h2 by ALPN), where a handler answers at once or returns a
// handle, and a client that goes away cancels everything its request
// started and gives back every byte it held.
//
//	mux := httpd.NewMux()
//	mux.HandleFunc("GET /health", func(r *httpd.Request) httpd.Reply {
//		return httpd.Text(200, "ok") // at once: no handle, no allocation
//	})
//	mux.HandleFunc("GET /slow", func(r *httpd.Request) httpd.Reply {
//		return httpd.Later(aio.Delay(r.Loop(), 2*time.Second, func() (httpd.Response, error) {
//			return httpd.TextResponse(200, "waited 2s"), nil
//		}))
//	})
//	srv := &httpd.Server{Handler: mux}
//	err := srv.Serve(rt, "127.0.0.1:8080") // one listener per loop of rt
//	...
//	err = srv.Shutdown(ctx) // the listeners and connections end
//	err = rt.Shutdown(context.Background()) // the loops, which go on running until then
//
// Shutdown ends the server only: the loops of rt go on running (they may
// serve other things), and stop with rt.Shutdown. Give rt.Shutdown a
// context of its own: srv.Shutdown returns soon after ctx ends (once it
// has closed what was left), and rt.Shutdown with that same ended ctx
// returns at once, the loops still stopping.
//
// # Loops, connections, handlers
//
// A Server serves on the loops of a Runtime, one listener each with
// SO_REUSEPORT, so the kernel spreads connections over them (on Linux and
// FreeBSD; on macOS, NetBSD and OpenBSD the kernel hands every connection
// to one of the listeners, so one loop serves them all). A connection
// belongs to the loop that accepted it and has no goroutine: its bytes
// are parsed on the loop, and the handler (Handler.ServeAIO) runs there
// too. A handler must not block: it returns a Reply, either a Response
// (Respond, Text, JSON, Bytes) sent at once, or Later(h), the handle of a
// response that arrives later: a timer, Work (a blocking call on the
// loop's pool), a Do body, All, Race of several. Stream writes a body as
// it is made. Request.Inform sends an interim response before the final
// one (103 Early Hints). FromHTTP serves a net/http handler, which may
// block, on the loop's Work pool.
//
// # HTTPS
//
// Config.Listen.TLS (aio.ListenConfig.TLS) serves TLS with the standard
// crypto/tls on the loops, with no goroutine per connection: a connection
// reaches the engines once its handshake ended, in plaintext. ALPN offers
// h2, http/1.1 and http/1.0 unless the tls.Config lists protocols itself;
// a client that negotiated h2 is served by the HTTP/2 engine, any other
// by the HTTP/1.x one.
// Plaintext HTTP sent to the TLS port that net/http's server would
// recognise (a GET, HEAD, POST, PUT or OPTIONS request) gets its plaintext
// "400 Bad Request"; anything else is closed in silence
// (Config.Listen.NotTLS changes the answer).
//
// # Arenas
//
// Each loop has a slab of fixed-size arenas (Config.Arenas of
// Config.ArenaSize bytes). A request takes one when its head has arrived:
// the head is copied into it (so a Request stays valid while its handler
// runs, whatever the connection reads meanwhile), a body that fits in half
// of the room follows, and the rest is for the handler to build its
// response in (Request.Arena). A Request's strings are views into the
// arena: valid until the request ends.
//
// An immediate response releases the arena once it is written. A handle's
// response is sent by a cleanup registered on the handle, which then
// releases the arena: one owner, one release path; a response that must
// wait for an earlier one on the connection (pipelining) releases it when
// it is written. When no arena is free the connection stops reading (TCP
// flow control holds its client) until one comes back: the server never
// allocates past the slab and never answers 503 for it. Stats.Refused
// counts those pauses. The last eighth of the arenas is for connections
// that hold none (Config.Arenas): a client that pipelines requests or
// opens streams its handlers hold cannot take them all.
//
// # Cancellation
//
// A handler's handle is adopted into its connection's scope. A client
// that goes away (a close, a reset, a timeout, or its EOF while a handler
// is pending: see Config.HalfClose) cancels it, and so its timers, its
// Work contexts, its nested handles and their OnCancel and Bracket
// releases; a cancelled handle sends nothing (Stats.Cancelled,
// Stats.ResponsesSuppressed). A failed handle is answered with 500, and so
// is a panicking handler, after which the loop goes on; the panic, with
// its stack, goes to Server.ErrorLog (the standard logger by default). A
// panic with http.ErrAbortHandler (in the handler, a continuation or a
// FromHTTP handler) aborts the response as net/http does, unlogged: over
// HTTP/1.1 the connection closes, over HTTP/2 the stream is reset
// (INTERNAL_ERROR), so the client sees it cut rather than a 500.
// Request.Scope is the request's own scope, closed when it ends: a timer
// that feeds a Stream belongs there. Request.Context is the same as a
// context, for goroutine code, and context.Cause tells why it ended: the
// client gone (ErrClientGone), Shutdown's deadline (ErrServerClosed), its
// loop stopping (aio.ErrStopped), a body refused as it streamed
// (*http.MaxBytesError, ErrBadBody), or the request's own end
// (context.Canceled).
//
// # HTTP/1.1
//
// The engine (RFC 9112) keeps connections alive (HTTP/1.0 too when asked),
// serves pipelined requests with responses in request order (at most
// Config.MaxPipeline in progress, then reading stops), reads bodies with
// Content-Length or chunked (a chunked body's trailer: Request.Trailer;
// a Stream's own trailer, Stream.SetTrailer, goes in its last chunk),
// sends 100 Continue in its turn after the responses before it (for a
// body small enough for the arena; for a larger one, when the handler
// reads it), answers HEAD without a body,
// caches the Date header per loop (made at most once a second), and times
// out slow heads and bodies that stop coming, small ones waiting in the
// arena and larger ones while their handler reads (Config.HeaderTimeout),
// small bodies that trickle in for longer than Config.BodyTimeout in all
// (408), and idle connections (Config.IdleTimeout); HeaderTimeout and
// IdleTimeout are swept by a ticker of each loop (an aio.Every from Serve
// to Shutdown: with the listener's, one timer and two handles in each
// loop's aio.Stats while the loop serves), so they
// may run up to a quarter of the shorter one (at most a second) late. A client that stops reading its responses is
// closed once the kernel has taken none of the bytes waiting for it, and
// the client has acknowledged none of those the kernel holds, for
// Config.WriteTimeout, on HTTP/2 too (the connection's own timer: no
// sweep), and its requests are cancelled. The engine's parser
// (internal/h1) is strict: heads over the limits get 431, targets
// 414, bodies 413, and malformed or ambiguous framing (the smuggling
// vectors) 400, and after any refusal the connection closes.
//
// A connection ends as nginx's lingering close ends it (aio.Conn.Drain):
// after a "Connection: close" response, an idle or finished one on
// Shutdown, a refusal other than 400, an HTTP/2 connection after its
// final GOAWAY (Shutdown's, an idle one's, a client's NO_ERROR one or one
// with an error code HTTP/2 does not define), the
// responses are flushed, FIN goes out, and what the client still sends (a
// pipelined request or frames that crossed the FIN) is read and dropped
// until the client's EOF closes the connection, or Config.Listen.Conn.Linger
// (aio.ConnConfig.Linger: 2 s by default; negative closes right after the
// FIN) after the FIN. Closing on those unread bytes would send a reset,
// which can destroy responses the client has not read yet. Clients close
// at the server's EOF, so Shutdown returns as soon as they have read their
// last response; one that does not holds it that long at most. A 400 (a malformed
// request, perhaps a smuggling attempt) and a request that is not HTTP
// at all are not lingered for, as nginx does not: the connection closes
// once the answer is out; so does an HTTP/2 connection ended for an error
// (GOAWAY with it), and a connection the client reset or left.
//
// The wire protocol is behind a small internal engine interface (engine.go):
// HTTP/2 is a second engine under the same Server, Request, Reply, Stream,
// arenas and cancellation.
//
// # HTTP/2
//
// A connection whose first bytes are the HTTP/2 client preface is served
// by the HTTP/2 engine (RFC 9113; h2c by prior knowledge, on the same
// port). With Config.H2CUpgrade (off by default: h2c smuggling past a
// proxy), so is one whose HTTP/1.1 request asks for Upgrade: h2c (RFC
// 7540 §3.2) with a valid HTTP2-Settings and a body, if any, that its
// arena holds: it is answered 101 and becomes stream 1. Any other
// upgrade request is served as HTTP/1.1. A request whose host field names another authority than its
// :authority, or that has two host fields, is malformed (RFC 9113
// §8.3.1) and its stream reset (PROTOCOL_ERROR); a host HTTP/1.1 would
// answer 400 is answered 400. Each stream is a request with its own
// arena; with none free (or only the reserve, for a connection with
// streams open already) the stream is refused (REFUSED_STREAM,
// Stats.Refused) and the connection goes on. A body that fits in half of
// the arena arrives with the request, unless the handler is Duplex (it
// starts at the head, for a client that streams both ways; FromHTTP's
// are); a larger one streams, the client's window growing as the handler
// reads it (what a stream holds for a handler that does not read is
// bounded by the stream's window, 64 KiB; the connection's window is given
// back as bytes arrive, so that a handler waiting for the Work pool, or
// paused, never holds up another stream's body). Responses respect the client's windows; a Stream's trailer is a
// HEADERS frame after its DATA. A stream the client resets
// (RST_STREAM) cancels its handler, which then sends nothing; a GOAWAY
// with an error cancels them all, one with NO_ERROR lets them finish.
// Shutdown sends GOAWAY twice (RFC 9113 §6.8): first with the largest
// stream id and a PING, then, after the PING's answer or a second, with
// the last stream taken; the streams taken until then finish. An idle
// connection closing says GOAWAY first. Push is never used; PRIORITY is
// ignored.
//
// Hostile clients meet budgets whose defaults are nghttp2's and x/net's
// (h2limits.go): streams reset, by the client or for its errors, and
// streams refused past SETTINGS_MAX_CONCURRENT_STREAMS (256, or
// Config.Arenas if fewer: a stream takes an arena) spend a
// token bucket of 1000 refilled at 33 a second (rapid reset; a stream
// refused because the loop has no arena free spends none); a header
// block of more than 8 CONTINUATION frames or twice Config.MaxHeadBytes
// is refused before it is buffered; more than 1000 PING, SETTINGS or
// RST_STREAM answers queued behind a client that does not read end the
// connection. Past a budget the connection gets GOAWAY(ENHANCE_YOUR_CALM)
// and closes, counted in Stats.Abusive. The decoded header list is bounded
// by Config.MaxHeadBytes (SETTINGS_MAX_HEADER_LIST_SIZE), so an HPACK bomb
// is answered 431 without being expanded, and so is a list longer than
// that, a single field longer than all of it included (as HTTP/1.1
// answers it; x/net's server ends the connection for such a field): the
// block is decoded to its end, its fields past the bound dropped, and
// the connection goes on.
//
// A response held by a flow-control window the client keeps shut (the
// "zero window" and "data dribble" attacks: the client reads everything
// and answers PINGs, so the write queue never stalls) is under
// Config.WriteTimeout as well (h2stall.go): a stream whose own
// window has not opened for that long is reset with CANCEL (we no longer
// want it; the client broke no rule; Stats.WindowStalls) and its handler
// cancelled, as a client's reset does; a connection whose window has not is the one
// stalled: GOAWAY(CANCEL), then it closes, cancelling its streams,
// counted in Stats.WriteTimeouts. What restarts the clock is DATA sent
// through the window, a frame's worth (16 KiB) in all or all that waits:
// a window dribbled open a few bytes at a time is cut (a minimum rate of
// 16 KiB per WriteTimeout, 546 B/s by default), and so is one opened and
// shut again before anything went. Meanwhile a
// stalled response holds its arena, the view of its body (no copy), or
// a Stream's bytes up to the point Full pauses it; a connection holds at
// most 256 streams, a loop Config.Arenas. Besides, a connection with a
// response waiting for a window is on Config.IdleTimeout until DATA
// moves again: the only bound with a negative WriteTimeout.
//
// # Threading
//
// Handler, Body and Stream methods, and a Request's, run on the request's
// loop; Request.Context's context and the Server's methods work from any
// goroutine. Built with the aiodebug tag (go test -tags aiodebug), a
// Body or Stream method, or Request.Stream, called off the request's loop
// panics at the call, as aio's loop-only paths do.
package httpd
