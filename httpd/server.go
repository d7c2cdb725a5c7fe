package httpd

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio"
)

// Defaults of Config.
const (
	DefaultArenaSize     = 64 << 10
	DefaultArenas        = 1024
	DefaultMaxHeadBytes  = 16 << 10
	DefaultMaxURIBytes   = 8 << 10
	DefaultMaxFields     = 100
	DefaultHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	DefaultWriteTimeout  = 30 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultMaxPipeline   = 16
)

// Bounds of Config: a larger value is taken as the bound. A loop makes an
// arena's Request (about 1.3 KB) and its block when the arena is first
// used, and keeps them for the next request: a loop holds as many as its
// peak of requests in progress needed, up to Arenas. A value past these
// bounds would ask for memory no machine has at that peak, where the Go
// runtime stops the process rather than fail.
const (
	MaxArenas    = 1 << 16 // per loop: 65,536 requests in progress, some 85 MB of Requests at that peak
	MaxArenaSize = 1 << 26 // 64 MiB
)

// Config holds a Server's limits. A zero field means its default.
type Config struct {
	// ArenaSize is the size of one request arena (the head, a buffered
	// body, the response being built). Arenas is how many each loop has:
	// a loop whose arenas are all taken stops reading requests until one
	// comes back (Stats.Refused counts it), and never allocates more. The
	// last eighth of them is kept for connections that hold none: a
	// connection whose requests hold arenas already (pipelined on
	// HTTP/1.1, concurrent streams on HTTP/2) cannot take those, so one
	// client cannot leave the others waiting; its next request waits for
	// an arena beyond them (HTTP/1.1) or is refused with REFUSED_STREAM,
	// which clients retry (HTTP/2), and Stats.Refused counts it. An
	// HTTP/1.1 connection whose head waits for an arena waits on the
	// server, not HeaderTimeout: for IdleTimeout at most, counted from the
	// start of the wait, after which it closes unanswered. Arenas are held
	// by bodies that arrive with their requests while the bodies arrive,
	// which BodyTimeout bounds. At most MaxArenaSize and MaxArenas.
	ArenaSize int
	Arenas    int

	// MaxHeadBytes bounds a request head (431 beyond; at most half the
	// arena), MaxURIBytes its target (414), MaxFields its field lines
	// (431), MaxBodyBytes its body (413; 0: no limit), on HTTP/1.1 and
	// HTTP/2 alike. A body without a length (chunked, or HTTP/2 without
	// content-length) that outgrows MaxBodyBytes while its handler reads
	// it is refused there: the handler's handle is cancelled (its OnData
	// never sees the end) and 413 is the answer in its place, unless its
	// response has begun (a Stream's head is out), which is then cut
	// short. An HTTP/1.1 connection closes after the refusal, lingering
	// (see the package doc); an HTTP/2 stream is reset with NO_ERROR once
	// the 413 is out, which tells the client to stop sending the body.
	// MaxBytesHandler sets a lower limit for the routes it wraps.
	MaxHeadBytes int
	MaxURIBytes  int
	MaxFields    int
	MaxBodyBytes int64

	// HeaderTimeout is the time a client has to send a whole request head,
	// from its first byte (or from the connection's start; on HTTP/2, a
	// header block's CONTINUATION frames, from its HEADERS, and the
	// client's first SETTINGS, from its preface), and the
	// longest it may pause while it sends the body: one small enough to
	// wait in the arena for its handler (counted from the head, or from
	// its 100 Continue if it waited for one), or a larger one, which
	// streams to its handler, while the handler reads (on HTTP/2, until
	// the response has begun: a client streaming both ways may then wait
	// for the response before it sends more). A slow body that keeps
	// coming is not cut, as with nginx's client_body_timeout.
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request, counted once its last response has reached the
	// kernel (a large one read slowly is not idle, and a client that
	// stops reading it is WriteTimeout's), and how long an HTTP/2
	// connection may hold a response that waits for the client's
	// flow-control window (no DATA can go out). The connection is closed
	// when one passes.
	HeaderTimeout time.Duration
	IdleTimeout   time.Duration

	// WriteTimeout closes a connection whose response bytes wait to be
	// sent while the kernel takes none of them and the client acknowledges
	// none of those it holds for this long (a client that stopped
	// reading: aio.Conn.SetWriteTimeout), HTTP/1.1 or
	// HTTP/2, and cancels its requests (Stats.WriteTimeouts). On HTTP/2
	// it also times the bytes a client's flow-control window holds back:
	// a stream whose own window stays shut this long is reset (CANCEL), a
	// connection whose window does is closed as above (see the package
	// doc). Progress, however slow, restarts it (through a window: 16
	// KiB of DATA sent in all), so unlike net/http's WriteTimeout (none by default,
	// and a deadline for the whole response) it never cuts a long
	// download or an event stream that is being read. The default,
	// DefaultWriteTimeout (30 s, nginx's send_timeout is 60 s), is far
	// longer than any live reader stalls with a kernel buffer to fill,
	// and bounds the time a dead or hostile one holds an arena, a
	// handler and up to aio.DefaultHighWater of queued bytes. Negative:
	// none.
	WriteTimeout time.Duration

	// BodyTimeout bounds the time a body that arrives with its request
	// (one small enough to wait in the arena for its handler, which has
	// not started) takes to arrive whole, counted as HeaderTimeout counts
	// its pauses: from its head, or from its 100 Continue. Past it the
	// request is answered 408 in place of its handler, which never starts
	// (counted in Stats.BadRequests), and the body's arena is free again;
	// an HTTP/1.1 connection then closes, lingering, and an HTTP/2 stream
	// is reset (NO_ERROR) once the 408 is out, which tells its client to
	// stop sending (a stream's pause past HeaderTimeout is answered so
	// too: a stream has no connection of its own to close). Without it, clients that
	// trickle their bodies, a byte within each HeaderTimeout, could hold
	// every arena of a loop for as long as they liked (the "slow POST"
	// attack); HeaderTimeout alone bounds the pauses. HTTP/1.1 checks it
	// as each piece of the body arrives, so a 408 may come up to one
	// HeaderTimeout late (a longer pause closes the connection first). A
	// body that streams to a running handler is the handler's to time
	// (aio.Within). Default DefaultBodyTimeout (30 s: 64 KiB in it is
	// about 2 KiB/s); negative: none.
	BodyTimeout time.Duration

	// MaxPipeline bounds the requests of one connection in progress at
	// once (read and not yet answered): past it, the connection stops
	// reading until a response is written.
	MaxPipeline int

	// HalfClose keeps serving a client that ended its side (EOF, a FIN)
	// with requests pending: their responses are sent, then the
	// connection closes. By default such a client has gone away and its
	// pending handlers are cancelled, sending nothing, as nginx does;
	// net/http cancels the request's context too, but still sends what a
	// handler that goes on regardless writes (FromHTTP's does not).
	HalfClose bool

	// DisableGeneralOptionsHandler hands "OPTIONS *" to the Handler. By
	// default the server answers it itself, before the Handler, with 200
	// and Content-Length 0, as net/http's Server does (and its field of
	// this name turns off).
	DisableGeneralOptionsHandler bool

	// H2CUpgrade answers a cleartext HTTP/1.1 request that asks for
	// Upgrade: h2c with 101 and serves the connection as HTTP/2 from
	// there (RFC 7540 §3.2; curl --http2 asks so). Off by default, the
	// header is ignored and the request served as HTTP/1.1, as net/http
	// does: RFC 9113 deprecates that way into HTTP/2, and behind a proxy
	// that passes Upgrade on (as it must for WebSocket) a client could
	// tunnel HTTP/2 requests the proxy never sees (h2c smuggling). Turn
	// it on only where no such proxy stands in front. HTTP/2 with prior
	// knowledge, and by ALPN over TLS, are served either way.
	H2CUpgrade bool

	// Listen configures the listeners. ReusePort is always set: a port
	// another program listens on is refused (EADDRINUSE) unless
	// Listen.ReusePortAnyProcess shares it (aio.ListenConfig.ReusePort). It is
	// where TLS goes: Listen.TLS (aio.ListenConfig.TLS) makes every
	// listener serve HTTPS with crypto/tls on the loops, the handshake
	// bounded by Listen.HandshakeTimeout, by default HeaderTimeout or
	// aio.DefaultHandshakeTimeout, whichever is shorter (net/http bounds it
	// by its ReadHeaderTimeout); the head's time starts after it. ALPN then
	// picks the engine: unless the tls.Config lists NextProtos itself, the
	// server offers h2, http/1.1 and http/1.0 (from a clone: the caller's tls.Config is not changed,
	// and may be shared), and a client that negotiates h2 is served
	// HTTP/2, any other (http/1.1, or no ALPN) HTTP/1.1, whatever its
	// first bytes (no prior-knowledge preface, no Upgrade: h2c over TLS;
	// an h2 connection that does not begin with the preface is closed). A
	// client that sends plaintext HTTP to such a listener gets net/http's
	// plaintext "400 Bad Request" ("Client sent an HTTP request to an
	// HTTPS server.") unless Listen.NotTLS (aio.ListenConfig.NotTLS)
	// answers otherwise; other plaintext is closed in silence.
	// Listen.Conn configures each connection (its Linger: see the package
	// doc).
	Listen aio.ListenConfig
}

// maxTimeout bounds the timeouts (withDefaults): some 146 years, which a
// loop's time (from its start) will not add up to a wrap with.
const maxTimeout = 1 << 62

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.ArenaSize, DefaultArenaSize)
	def(&c.Arenas, DefaultArenas)
	def(&c.MaxHeadBytes, DefaultMaxHeadBytes)
	def(&c.MaxURIBytes, DefaultMaxURIBytes)
	def(&c.MaxFields, DefaultMaxFields)
	def(&c.MaxPipeline, DefaultMaxPipeline)
	c.ArenaSize = min(max(c.ArenaSize, 1024), MaxArenaSize)
	c.Arenas = min(c.Arenas, MaxArenas)
	c.MaxHeadBytes = min(c.MaxHeadBytes, c.ArenaSize/2)
	c.MaxURIBytes = min(c.MaxURIBytes, c.MaxHeadBytes)
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.BodyTimeout == 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	// math.MaxInt64 is "never": capped where the loop's time plus it
	// cannot wrap into the past, so the deadlines need no check.
	c.HeaderTimeout = min(c.HeaderTimeout, maxTimeout)
	c.IdleTimeout = min(c.IdleTimeout, maxTimeout)
	c.WriteTimeout = min(c.WriteTimeout, maxTimeout)
	c.BodyTimeout = min(c.BodyTimeout, maxTimeout)
	if c.Listen.HandshakeTimeout == 0 {
		// The handshake is part of the time a client has to send its
		// head, as net/http bounds it by its ReadHeaderTimeout.
		c.Listen.HandshakeTimeout = min(c.HeaderTimeout, aio.DefaultHandshakeTimeout)
	}
	c.Listen.ReusePort = true
	c.Listen.TLS = withALPN(c.Listen.TLS) // tls.go
	if c.Listen.TLS != nil && c.Listen.NotTLS == nil {
		c.Listen.NotTLS = notTLS // tls.go
	}
	return c
}

// Server serves HTTP/1.1 and HTTP/2 (h2c) on the loops of a Runtime, one
// listener per loop (SO_REUSEPORT: the kernel spreads the connections),
// with every connection owned by its loop and no goroutine per
// connection.
//
// Set Handler and Config, then call Serve once. A nil Handler is an empty
// Mux: every request gets 404 (net/http's Server uses DefaultServeMux;
// this package has no global one). Its methods may be called from any
// goroutine.
type Server struct {
	Handler Handler
	Config  Config

	// ErrorLog receives what the server cannot tell a client, each of
	// which also answers 500 or cuts the response: a handler's panic, or
	// one in a continuation of its handle or in a FromHTTP handler (with
	// its stack; not http.ErrAbortHandler, which cuts the response
	// unlogged, as net/http); the error of a handler's handle that failed
	// (not one that was cancelled: its client is gone); a response
	// refused because it cannot be sent as made (a field that would split
	// it, a Content-Length its body does not have); a reply dropped
	// because a Stream the handler began went out first; a second
	// Request.Stream (the first is kept). nil logs with the
	// log package's standard logger, as net/http's Server does. Set it
	// before Serve.
	ErrorLog *log.Logger

	// serveMu is held by ServeLoops while it starts, so that a Shutdown
	// racing it sees it done (or not begun), never half way.
	serveMu sync.Mutex
	mu      sync.Mutex
	cfg     Config
	loops   []*loopState
	addr    netip.AddrPort
	state   atomic.Int32 // 0 new, 1 serving, 2 shutting down, 3 shut down before it served
	onShut  []func()     // RegisterOnShutdown's, under mu
	left    atomic.Int32 // loops not drained yet, during Shutdown
	doneCh  chan struct{}
	cut     atomic.Bool // Shutdown's deadline closed a connection
	stdOnce sync.Once
	std     *http.Server // stdServer's, made once
}

// stdServer is the *http.Server a FromHTTP handler finds in its context
// under http.ServerContextKey, as under net/http: code written for
// net/http asks for it (httputil.ReverseProxy aborts a response whose
// backend broke off only when it is there, and otherwise ends it as if
// whole). It describes s (Addr, the timeouts, ErrorLog) and serves
// nothing. Any goroutine.
func (s *Server) stdServer() *http.Server {
	s.stdOnce.Do(func() {
		s.std = &http.Server{
			Addr:              s.Addr().String(),
			ReadHeaderTimeout: s.cfg.HeaderTimeout,
			IdleTimeout:       s.cfg.IdleTimeout,
			WriteTimeout:      s.cfg.WriteTimeout,
			MaxHeaderBytes:    s.cfg.MaxHeadBytes,
			ErrorLog:          s.ErrorLog,
		}
	})
	return s.std
}

// logf logs what ErrorLog is for. Any goroutine.
func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// Errors of Serve.
var (
	ErrServing      = errors.New("httpd: Serve called twice")
	ErrNoLoops      = errors.New("httpd: no loop to serve on")
	ErrServerClosed = errors.New("httpd: Server closed") // Serve after Shutdown, as net/http's
)

// Serve starts serving on addr ("host:port"; port 0 picks one, see Addr)
// on every loop rt runs now, one listener each, and returns once they all
// listen. It does not block further: the loops serve. It returns
// ErrNoLoops without a loop, ErrServing if the Server serves already,
// ErrServerClosed after Shutdown, and a listener's error (the address in
// use) after closing the listeners it opened: the Server is then as it
// was, and may Serve again. Any goroutine but the loops'.
func (s *Server) Serve(rt *aio.Runtime, addr string) error {
	return s.ServeLoops(addr, rt.Loops()...)
}

// ServeLoops is Serve on the given loops (none: ErrNoLoops). Any goroutine
// but the loops'.
func (s *Server) ServeLoops(addr string, loops ...*aio.Loop) error {
	if len(loops) == 0 {
		return ErrNoLoops
	}
	s.serveMu.Lock()
	defer s.serveMu.Unlock()
	if !s.state.CompareAndSwap(0, 1) {
		if s.state.Load() >= 2 {
			return ErrServerClosed
		}
		return ErrServing
	}
	if s.Handler == nil {
		s.Handler = NewMux()
	}
	s.cfg = s.Config.withDefaults()
	s.doneCh = make(chan struct{})
	tick := min(s.cfg.HeaderTimeout, s.cfg.IdleTimeout) / 4
	tick = min(max(tick, 5*time.Millisecond), time.Second)
	for _, l := range loops {
		ls := newLoopState(s, &s.cfg, l)
		ln, err := aio.Listen(l, addr, s.cfg.Listen, ls.accept)
		if err != nil {
			s.unserve()
			return err
		}
		ls.ln = ln
		ls.ticker = aio.Every(l, tick, ls.sweep)
		addr = ln.Addr().String() // the others join the port the first one got
		s.mu.Lock()
		s.loops = append(s.loops, ls)
		s.addr = ln.Addr()
		s.mu.Unlock()
	}
	return nil
}

// unserve undoes a Serve that failed part way, leaving the Server as it
// was (Serve may be called again): the listeners it opened close, and so
// do the connections they accepted meanwhile, which no sweep, Stats or
// Shutdown would see once the loops are forgotten. Under serveMu.
func (s *Server) unserve() {
	s.mu.Lock()
	for _, ls := range s.loops {
		ls.ln.Close()
		ls.ticker.Cancel()
		_ = ls.l.Post(ls.closeConns) // after the Close: nothing is accepted after it
	}
	s.loops, s.addr = nil, netip.AddrPort{}
	s.mu.Unlock()
	s.state.Store(0)
}

// Addr returns the address the server listens on, with the port the kernel
// chose for port 0; the zero AddrPort before Serve.
func (s *Server) Addr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

func (s *Server) loopStates() []*loopState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loops
}

// RegisterOnShutdown registers f to run, in a goroutine of its own, when
// Shutdown begins, as net/http's does: for what Shutdown cannot end by
// itself, a stream that only its handler knows how to end (an event
// stream, which otherwise runs until Shutdown's deadline cuts it), or a
// NetConn view's code. f should start that end, not wait for it: post
// to the loops (aio.Loop.Post) what runs there, such as Stream.End. Any
// goroutine.
func (s *Server) RegisterOnShutdown(f func()) {
	s.mu.Lock()
	s.onShut = append(s.onShut, f)
	s.mu.Unlock()
}

// Shutdown stops the server gracefully: every listener closes, idle
// kept-alive connections end, and the requests in progress may finish
// (their responses say Connection: close, and each connection ends after
// its last one; an HTTP/2 connection gets GOAWAY and ends after its last
// stream) until ctx ends. A connection ends with a lingering close (see
// the package doc): FIN, then it closes at its client's EOF, or
// Config.Listen.Conn.Linger (2 s by default) after the FIN. When ctx
// ends, the rest are cancelled and their connections closed, and
// Shutdown returns ctx's error. It returns nil once every connection has
// closed in time (at once for a server with none). The loops go on
// running; the server keeps its counters (Stats) and lets go of its
// arenas, each as its last request ends. Called on one of the server's loops (in a handler), it would
// wait for that loop: it starts the shutdown and returns
// aio.ErrAwaitOnLoop at once, and ctx's end (which must not come when
// the handler returns) still cuts the shutdown short. A nil ctx is an
// error wrapping aio.ErrInvalidArgument, and nothing is shut down.
func (s *Server) Shutdown(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("httpd: Shutdown with a nil context: %w", aio.ErrInvalidArgument)
	}
	s.serveMu.Lock()
	if s.state.CompareAndSwap(0, 3) || s.state.Load() == 3 {
		s.serveMu.Unlock()
		return nil // it never served: a later Serve says so
	}
	loops := s.loopStates()
	if s.state.CompareAndSwap(1, 2) {
		s.mu.Lock()
		for _, f := range s.onShut {
			go f()
		}
		s.onShut = nil // run once: what they captured goes once they have run
		s.mu.Unlock()
		s.left.Store(int32(len(loops)))
		if len(loops) == 0 { // Serve failed: nothing serves
			close(s.doneCh)
		}
		for _, ls := range loops {
			if err := ls.l.Post(ls.drain); err != nil {
				s.loopDrained() // the loop is gone, and its connections with it
			}
		}
	}
	s.serveMu.Unlock()
	for _, ls := range loops {
		if ls.l.OnLoop() { // waiting here would hold the loop the drain needs
			go func() { _ = s.awaitDrain(ctx, loops) }()
			return aio.ErrAwaitOnLoop
		}
	}
	return s.awaitDrain(ctx, loops)
}

// awaitDrain waits for the drain of loops, then, once ctx ends, closes
// what is left. A server that had nothing left to close when ctx ended
// (it was at rest, or its last connections closed before the deadline's
// close ran) has shut down in time: nil.
func (s *Server) awaitDrain(ctx context.Context, loops []*loopState) error {
	select {
	case <-s.doneCh:
		return nil
	case <-ctx.Done():
	}
	for _, ls := range loops {
		_ = ls.l.Post(ls.closeAll)
	}
	select {
	case <-s.doneCh:
		if !s.cut.Load() {
			return nil
		}
	case <-time.After(5 * time.Second):
	}
	return ctx.Err()
}

// loopDrained counts a loop whose connections have all closed.
func (s *Server) loopDrained() {
	if s.left.Add(-1) == 0 {
		close(s.doneCh)
	}
}

// drain starts the shutdown on the loop.
func (ls *loopState) drain() {
	ls.draining = true
	ls.ln.Close()
	for hc := ls.conns.head; hc != nil; {
		next := hc.links[linkAll].next
		hc.drain()
		hc = next
	}
	ls.checkDrained()
}

// closeAll closes every connection of the loop: Shutdown's deadline. The
// requests cancelled are told why first (Request.Context).
func (ls *loopState) closeAll() {
	if ls.conns.head != nil {
		ls.srv.cut.Store(true)
	}
	ls.closeConns()
	ls.checkDrained()
}

// closeConns closes every connection of the loop, its requests told why
// first (ErrServerClosed): Shutdown's deadline (closeAll), and a Serve
// undone (unserve). On the loop.
func (ls *loopState) closeConns() {
	for hc := ls.conns.head; hc != nil; {
		next := hc.links[linkAll].next
		hc.cancelAllFor(ErrServerClosed)
		hc.c.Close()
		hc = next
	}
}

// checkDrained tells the server once a draining loop has no connection.
func (ls *loopState) checkDrained() {
	if ls.draining && !ls.drained && ls.conns.head == nil {
		ls.drained = true
		ls.ticker.Cancel()
		ls.dropArenas()
		ls.srv.loopDrained()
	}
}

// Stats are a server's counters, summed over its loops (the JSON names
// are those examples/webserver's /stats page shows).
//
// A request is counted in Requests once its handler starts. One refused
// before that (a head or body over its limit, a malformed request, a body
// over MaxBodyBytes that arrived with its head) counts in BadRequests
// only. Cancelled counts handler handles that ended cancelled: their
// client went away (closed, reset, RST_STREAM, timed out), Shutdown's
// deadline came, or their body outgrew its limit while they read it. A
// handler that turns its own timeout into a reply (a 504 from Within and
// Catch) completed, and is not counted there.
//
// So a body over its limit counts by when it is found out: before the
// handler starts (MaxBodyBytes, with the head) in BadRequests; when a
// MaxBytesHandler would start its handler, in Requests only (its 413 is
// the handler's answer); while the handler reads it, in Requests,
// BadRequests and Cancelled.
//
// ResponsesSuppressed counts what the server held back or cut itself. A
// response handed whole to its connection (a Bytes reply, a Stream that
// called End) counts as sent, as net/http's does once its handler has
// returned, though what the kernel has not taken yet is lost if the
// connection then closes under it: a client that resets, a WriteTimeout,
// or Shutdown's deadline (whose ctx error says that connections were cut).
type Stats struct {
	ConnsOpen           int64  `json:"conns_open"`           // TCP connections open now
	StreamsOpen         int64  `json:"streams_open"`         // requests in progress now (head read, not yet ended)
	Requests            uint64 `json:"requests"`             // requests whose handler was started
	HandlersPending     int64  `json:"handlers_pending"`     // handler handles not yet terminal
	Cancelled           uint64 `json:"cancelled"`            // handler handles that ended cancelled
	ResponsesSuppressed uint64 `json:"responses_suppressed"` // responses not sent whole: the client was gone, or the handler cancelled (a stream cut after some of its body counts too)
	ArenasInUse         int64  `json:"arenas_in_use"`        // arenas taken and not yet released
	ArenasCapacity      int64  `json:"arenas_capacity"`      // arenas in all
	Refused             uint64 `json:"refused"`              // times a connection stopped reading for want of an arena, or an HTTP/2 stream was refused
	ArenaReleases       uint64 `json:"arena_releases"`       // arenas given back
	Panics              uint64 `json:"panics"`               // panics of handlers, and of what their handles ran (a continuation, Work, a FromHTTP handler): answered 500, or the response cut
	Failed              uint64 `json:"failed"`               // handler handles that failed otherwise (their error to ErrorLog): answered 500, or the response cut
	BadRequests         uint64 `json:"bad_requests"`         // requests refused by the parser (4xx, 5xx, then closed; not HTTP/1: closed)
	WriteTimeouts       uint64 `json:"write_timeouts"`       // connections closed by Config.WriteTimeout
	Abusive             uint64 `json:"abusive"`              // HTTP/2 connections ended for a hostile client's flood: GOAWAY(ENHANCE_YOUR_CALM)
	WindowStalls        uint64 `json:"window_stalls"`        // HTTP/2 streams reset (CANCEL) because the client kept their window shut for Config.WriteTimeout
}

// Stats returns the server's counters, summed over its loops. Any
// goroutine.
func (s *Server) Stats() Stats {
	var st Stats
	for _, ls := range s.loopStates() {
		c := &ls.st
		st.ConnsOpen += c.connsOpen.Load()
		st.StreamsOpen += c.streamsOpen.Load()
		st.Requests += c.requests.Load()
		st.HandlersPending += c.handlersPending.Load()
		st.Cancelled += c.cancelled.Load()
		st.ResponsesSuppressed += c.suppressed.Load()
		st.ArenasInUse += int64(ls.slab.InUse())
		st.ArenasCapacity += int64(ls.slab.Cap())
		st.Refused += c.refused.Load()
		st.ArenaReleases += c.releases.Load()
		st.Panics += c.panics.Load()
		st.Failed += c.failed.Load()
		st.BadRequests += c.badRequests.Load()
		st.WriteTimeouts += c.writeTimeouts.Load()
		st.Abusive += c.abusive.Load()
		st.WindowStalls += c.windowStalls.Load()
	}
	return st
}
