package httpd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
)

// FromHTTP returns a Handler that runs h, a net/http handler, on the
// loop's Work pool, so that handlers written for net/http (which block)
// serve here too. Each call of h holds one of the pool's goroutines
// (aio.Config.WorkPool: 4 by default) until it returns: a handler that
// runs long (an event stream, a slow upload) takes one for all that
// time, and the requests beyond the pool wait in its queue, their
// clients unanswered; size the pool for them. The *http.Request's context
// is cancelled by the same events as a native handler's handle: the
// client going away, Shutdown's deadline; context.Cause tells which, as
// for Request.Context (ErrClientGone, ErrServerClosed...). It holds, as
// net/http's, the connection's local address under http.LocalAddrContextKey
// and under http.ServerContextKey an *http.Server that describes the
// Server (Addr, timeouts, ErrorLog) but serves nothing: its methods do
// not reach this Server. Its body is
// the request's: buffered, or streamed from the connection with flow
// control (reading pauses while h does not read; it starts, and "100
// Continue" goes to a client that waits for it, when h first reads). h
// starts at the request's head, as net/http's does (the handler is
// Duplex), with a small body that came with the head already buffered,
// so a client may stream both ways (over HTTP/1.1 with a chunked body, as
// a client that streams does not know its length; there
// EnableFullDuplex is nil, and a response begun before the body was read
// whole says Connection: close). A client
// that goes away ends the body where it is: what arrived is still read
// (all of it, and then io.EOF, if the body had arrived whole), then
// io.ErrUnexpectedEOF. Once h returns, the body is closed: a goroutine
// still reading it gets http.ErrBodyReadAfterClose, as from net/http.
// Over TLS, its TLS is the connection's state, as net/http's is; its
// Close tells, as net/http's does, that the client asked for the
// connection to close after this response.
//
// A response up to 64 KiB is buffered and sent whole when h returns, with
// a Content-Length. One that grows past that, or that h flushes (the
// ResponseWriter is an http.Flusher, as server-sent events need), streams
// from there: what h wrote is sent at once, chunked on HTTP/1.1 (or with
// the Content-Length h set), as DATA on HTTP/2, and so is every later
// Write, which blocks while the connection cannot take more (so a large
// body never sits in memory) and fails with ErrStreamClosed once the
// client has gone away. A Content-Length h sets before its body is the
// body's length, as net/http holds it: Write takes no byte past it
// (http.ErrContentLength), and a body short of it is cut (the client sees
// it end early, not a whole response of another length). The head is the
// header as it was at WriteHeader or the first Write, as net/http's: a
// field set later is not sent (but a declared trailer's). Its fields are
// cleaned as net/http cleans them, not refused: a name that is not a token
// is dropped, CR and LF in a value become spaces, and a value still not
// valid (a control byte) is dropped. The Content-Type h leaves unset is
// sniffed from the body's first bytes (not under a Content-Encoding); a
// nil one asks for none, as in net/http (the Date is the server's,
// whatever h sets). A Trailer field declares trailers only if set before
// the head, as in net/http. A panic in h
// answers 500, or cuts a response that is already streaming; a panic with
// http.ErrAbortHandler (httputil.ReverseProxy's when its backend breaks
// off) cuts it in every case, as net/http does. The answer
// to HEAD has the Content-Length h set (http.ServeContent sets the length
// of the body it does not write). A trailer, as net/http has it (the
// fields the Trailer header declares, set after the body, and those named
// with http.TrailerPrefix), follows the body (Stream.SetTrailer); a
// response that has one goes as a stream, chunked on HTTP/1.1. Fields a
// trailer may not carry are dropped, as net/http drops them. A
// "Connection: close" h sets before the head ends the connection after
// the response (Response.Close), as net/http honours it.
//
// Of http.ResponseController's methods, Flush and EnableFullDuplex work,
// and SetReadDeadline and SetWriteDeadline report http.ErrNotSupported:
// the connection is the loop's, and its deadlines are the Server's
// (Config.WriteTimeout cuts a response only when its client stops
// reading it, so a long stream needs no deadline moved).
//
// The ResponseWriter is an http.Hijacker: on HTTP/1.1 Hijack hands h the
// connection (a WebSocket library after its 101, a CONNECT tunnel) as
// its NetConn view (aio.Conn.NetConn), with a bufio.ReadWriter on it;
// bytes the client sent after the request come first. The request must
// be its connection's only one in progress, its body read whole (a GET's,
// none) and its response not begun; else, and on HTTP/2 (as net/http's),
// Hijack returns an error. The connection then leaves the Server: it is
// no longer counted (Stats.ConnsOpen), timed, drained or closed by
// Shutdown, as net/http's Shutdown leaves a hijacked one; it is h's to
// close, and the Server's timeouts no longer apply to it. The writer's
// Write and Flush return http.ErrHijacked from then on, and what h
// returns is not sent. Unlike net/http's, Hijack does not send a head h
// wrote before it (a 101 included): it refuses once the response has
// begun, and h writes its 101 on the connection. A request that does not
// ask to switch protocols (Upgrade, CONNECT) may have what follows it
// read as HTTP before h asks: refused, it makes Hijack fail rather than
// hand over a stream with a hole. Until h returns, the connection's end
// (a reset) still cancels its context, as a request's. h holds one of the pool's
// goroutines, and the request its arena, until h returns: serve a
// long-lived connection from another goroutine and return, as with
// net/http.
//
// Everything h gets is copied out of the request's arena: h runs on
// another goroutine, whose end a cancelled request's Context and Scope do
// not wait for. A nil h panics at once, as Mux.Handle of one does.
func FromHTTP(h http.Handler) Handler {
	if h == nil {
		panic("httpd: FromHTTP of a nil handler") // as Mux.Handle does, at once rather than per request
	}
	return Duplex(HandlerFunc(func(r *Request) Reply {
		req, err := httpRequest(r)
		if err != nil {
			return Reply{resp: errResponse(400)}
		}
		out := newStreamOut(r) // used only if the response streams
		h2 := r.h2s != nil     // the response goes out on HTTP/2, an upgraded request's too
		// The handler's context is done when the Work is cancelled, and
		// tells why.
		ctx, end := causeContext(r.cause())
		// As net/http's: the values handlers look up in it.
		ctx = context.WithValue(ctx, http.ServerContextKey, r.ls.srv.stdServer())
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, net.TCPAddrFromAddrPort(r.eng.conn().LocalAddr()))
		return Later(aio.Work(r.Loop(), func(context.Context) (Response, error) {
			defer end(context.Canceled)
			if b, ok := req.Body.(*bufferedBody); ok {
				defer b.Close() // as net/http's: a goroutine still reading gets an error
			}
			if p, ok := req.Body.(*bodyPipe); ok {
				// The request ending first (its client gone, Shutdown's
				// deadline) ends the body where it is: a reader waiting
				// for more wakes. The handler's return closes it, as
				// net/http's: a goroutine still reading gets an error,
				// not a wait for bytes nobody will send.
				stop := context.AfterFunc(ctx, p.endHere)
				defer func() { stop(); _ = p.Close() }()
			}
			w := &responseWriter{header: make(http.Header), ctx: ctx, out: out, head: req.Method == "HEAD", h2: h2}
			h.ServeHTTP(w, req.WithContext(ctx))
			if w.hijacked {
				return Response{}, nil // the connection is the handler's: nothing is sent
			}
			w.fixHead() // a handler that never wrote: its head is the header as it left it
			trailer := w.trailer()
			if !w.streaming && (trailer != nil || w.short()) {
				// A trailer comes after the body of a stream, and a body
				// short of its Content-Length is cut as a stream's is.
				_ = w.streamWith(trailer, nil)
			}
			if w.streaming {
				out.end(ctx, trailer)
				return Response{}, nil // the stream was the response
			}
			return w.response(), nil
		}).OnCancel(func() { end(aio.ErrCancelled) }))
	}))
}

// httpRequest makes the *http.Request of r, with copies of everything.
func httpRequest(r *Request) (*http.Request, error) {
	target := strings.Clone(r.Target())
	// A CONNECT's authority form (RFC 9112 §3.2.3: "host:port"; on HTTP/2
	// its :authority, RFC 9113 §8.5, both checked by the engines) is the
	// URL's Host, as net/http reads it, not a scheme and an opaque part.
	// A CONNECT with a path (net/rpc's) is an origin-form request.
	connect := r.Method() == "CONNECT" && !strings.HasPrefix(target, "/")
	rawURL := target
	if connect {
		rawURL = "http://" + target
	}
	u, err := url.ParseRequestURI(rawURL)
	if err != nil {
		return nil, err
	}
	if connect {
		u.Scheme = ""
	}
	req := &http.Request{
		Method:     strings.Clone(r.Method()),
		URL:        u,
		Proto:      strings.Clone(r.Proto()),
		ProtoMajor: 1,
		ProtoMinor: r.ProtoMinor(),
		Header:     make(http.Header, len(r.head.Fields)),
		Host:       strings.Clone(r.Host()),
		RequestURI: target,
		RemoteAddr: r.RemoteAddr().String(),
		// The client's "close after this response", as net/http reads it
		// (HTTP/1.1 "Connection: close", HTTP/1.0 without keep-alive);
		// never on HTTP/2, which has no Connection field.
		Close: r.h2s == nil && r.head.Close,
	}
	if r.h2s != nil && string(r.head.Proto) == string(proto20) {
		// Not the request of an Upgrade: h2c, which was made over
		// HTTP/1.1 (net/http's h2c says HTTP/1.1 of it too).
		req.ProtoMajor = 2 // ProtoMinor 0
	}
	if st, ok := r.eng.tlsState(); ok {
		req.TLS = &st
	}
	// The fields as net/http's server leaves them in Header: Host is
	// req.Host, Transfer-Encoding req.TransferEncoding, and the Trailer
	// of a body that can carry one req.Trailer; HTTP/2's cookie fields are
	// one, joined (RFC 9113 §8.2.3).
	trailed := r.body.length < 0 || r.h2s != nil
	for name, value := range r.Headers() {
		switch {
		case h1.EqualFold(strBytes(name), "Host"), h1.EqualFold(strBytes(name), "Transfer-Encoding"):
			continue
		case trailed && h1.EqualFold(strBytes(name), "Trailer"):
			continue
		}
		req.Header.Add(name, strings.Clone(value)) // Add canonicalises (and copies) the name
	}
	if cookies := req.Header["Cookie"]; r.h2s != nil && len(cookies) > 1 {
		req.Header["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	req.ContentLength = r.body.length
	if r.body.length < 0 && req.ProtoMajor == 1 {
		// HTTP/2 has no Transfer-Encoding: net/http leaves it empty there.
		req.TransferEncoding = []string{"chunked"}
	}
	for v := range r.HeaderValues("Trailer") { // the declared names, as net/http has them
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				if req.Trailer == nil {
					req.Trailer = make(http.Header)
				}
				req.Trailer[http.CanonicalHeaderKey(name)] = nil
			}
		}
	}
	if b, ok := r.body.bytes(); ok && len(b) == 0 && r.body.length == 0 {
		req.Body = http.NoBody // as net/http's server gives a request that has none
	} else if ok {
		req.Body = newBufferedBody(bytes.Clone(b))
		req.Trailer = trailerOf(r, req.Trailer)
	} else {
		if req.Trailer == nil && r.body.length < 0 {
			req.Trailer = make(http.Header) // filled in place: the handler has a copy of req
		}
		req.Body = newBodyPipe(r, req)
	}
	if r.routed {
		req.Pattern = strings.Clone(r.Pattern())
		for i := range r.params.Len() {
			req.SetPathValue(r.params.Name(i), string(r.params.Value(i)))
		}
	}
	return req, nil
}

// bufferedBody is a request body that arrived whole, copied out of the
// arena, as an io.ReadCloser: once closed (by the handler, or by FromHTTP
// when the handler returns) a Read fails with http.ErrBodyReadAfterClose,
// as on net/http's body. The handler's goroutines read and close it:
// under mu.
type bufferedBody struct {
	mu     sync.Mutex
	r      bytes.Reader // under mu
	closed bool         // under mu
}

func newBufferedBody(b []byte) *bufferedBody {
	body := &bufferedBody{}
	body.r.Reset(b)
	return body
}

func (b *bufferedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.r.Read(p)
}

// Close ends the body: what was not read is dropped. Idempotent.
func (b *bufferedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.r.Reset(nil)
	b.mu.Unlock()
	return nil
}

// bodyPipe is a streamed request body as an io.ReadCloser for a goroutine:
// the loop appends copies of what arrives (OnData), and pauses the body
// while more than pipeHigh bytes wait; Read resumes it below pipeLow.
type bodyPipe struct {
	l   *aio.Loop
	r   *Request // used on the loop only, while the request of seq lives
	seq uint64
	req *http.Request // nil for CopyTo; else its Trailer map is filled on the loop at the end, before Read sees it

	mu      sync.Mutex
	cond    sync.Cond
	chunks  [][]byte
	n       int  // bytes waiting
	end     bool // the last bytes arrived
	cut     bool // the request ended before its body: what arrived is read, then io.ErrUnexpectedEOF
	closed  bool // Close was called, or the handler returned: reads fail
	paused  bool
	started bool // Read has asked the loop for the body (start)
}

const (
	pipeHigh = 256 << 10
	pipeLow  = 64 << 10
)

// trailerOf adds r's trailer fields (copies) to h, made if nil and
// needed, and returns it.
func trailerOf(r *Request, h http.Header) http.Header {
	for name, value := range r.Trailers() {
		if h == nil {
			h = make(http.Header)
		}
		h.Add(name, strings.Clone(value))
	}
	return h
}

// newBodyPipe makes req's body, streamed from r's; at its end, req.Trailer
// gets r's trailer (as net/http's, it is complete once Read returns EOF).
// The body starts to flow at the first Read, as net/http's does: a
// handler that refuses the request unread sends no "100 Continue" for it.
func newBodyPipe(r *Request, req *http.Request) *bodyPipe {
	p := &bodyPipe{l: r.ls.l, r: r, seq: r.seq, req: req}
	p.cond.L = &p.mu
	return p
}

// startLocked asks the loop for the body at the first Read or WriteTo;
// a loop that has stopped will send none, and the body is cut there.
// With p.mu held.
func (p *bodyPipe) startLocked() {
	if !p.started && !p.closed {
		p.started = true
		if err := p.l.Post(p.start); err != nil {
			p.cut = true
		}
	}
}

// start starts the body's flow on the loop, if its request still lives
// (else the request's end has closed the pipe, or will).
func (p *bodyPipe) start() {
	if p.r.live(p.seq) {
		p.r.body.onData(p.onData)
	}
}

// onData runs on the loop with the next bytes of the body.
func (p *bodyPipe) onData(b []byte, end bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && len(b) > 0 {
		p.chunks = append(p.chunks, bytes.Clone(b))
		p.n += len(b)
	}
	if end && !p.end && p.req != nil && p.req.Trailer != nil {
		trailerOf(p.r, p.req.Trailer) // the map the handler's request shares
	}
	p.end = p.end || end
	if p.n > pipeHigh && !p.end && !p.paused {
		p.paused = true
		p.r.body.paused = true
	}
	p.cond.Broadcast()
}

// Read reads what has arrived, waiting for more; io.EOF after the end.
// A request that ends before its body (the client went away) ends the
// body with io.ErrUnexpectedEOF.
func (p *bodyPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.startLocked()
	for len(p.chunks) == 0 && !p.end && !p.cut && !p.closed {
		p.cond.Wait()
	}
	switch {
	case p.closed:
		return 0, http.ErrBodyReadAfterClose
	case len(p.chunks) > 0:
	case p.end:
		return 0, io.EOF
	default: // cut
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(b, p.chunks[0])
	if n == len(p.chunks[0]) {
		p.chunks[0] = nil
		p.chunks = p.chunks[1:]
	} else {
		p.chunks[0] = p.chunks[0][n:]
	}
	p.tookLocked(n)
	return n, nil
}

// tookLocked counts k bytes the reader has had, and resumes the body once
// what waits for it falls below pipeLow. With p.mu held.
func (p *bodyPipe) tookLocked(k int) {
	if p.closed {
		return // Close dropped the count with the chunks
	}
	p.n -= k
	if p.paused && p.n < pipeLow {
		p.paused = false
		_ = p.l.Post(p.resume)
	}
}

// WriteTo writes what arrives to w until the end, as io.Copy would with
// Read, but chunk by chunk as the loop copied them: no buffer of its own
// and no second copy. The lock is not held while w writes, so the loop
// never waits for a slow w (the body pauses instead). The chunks it has
// taken count as waiting until w has them: the pipe holds pipeHigh in
// all, not that much more for each batch w works through.
func (p *bodyPipe) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for {
		p.mu.Lock()
		p.startLocked()
		for len(p.chunks) == 0 && !p.end && !p.cut && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return n, http.ErrBodyReadAfterClose
		}
		chunks := p.chunks
		p.chunks = nil // p.n counts them until w has them
		end := p.end
		p.mu.Unlock()
		for i, c := range chunks {
			m, err := w.Write(c)
			n += int64(m)
			if err == nil && m < len(c) {
				err = io.ErrShortWrite
			}
			took := len(c)
			if err != nil { // the rest of the batch is dropped with it
				for _, rest := range chunks[i+1:] {
					took += len(rest)
				}
			}
			p.mu.Lock()
			p.tookLocked(took)
			p.mu.Unlock()
			if err != nil {
				return n, err
			}
		}
		if len(chunks) == 0 {
			if !end {
				return n, io.ErrUnexpectedEOF // cut
			}
			return n, nil
		}
	}
}

// resume resumes the body on the loop, if its request still lives.
func (p *bodyPipe) resume() {
	if p.r.live(p.seq) {
		p.r.body.resume()
	}
}

// endHere ends the body where it is: its request has ended (the client went
// away, or Shutdown's deadline came). What has arrived is still read, and
// is the whole body if its end had arrived too; else io.ErrUnexpectedEOF
// follows it, so that a body cut short never looks whole.
func (p *bodyPipe) endHere() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.cond.Broadcast()
}

// Close makes the reader stop: what waits and what arrives later is
// dropped, and a Read from then on (a goroutine still reading when the
// handler returned) fails with http.ErrBodyReadAfterClose, as net/http's.
func (p *bodyPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.chunks, p.n = nil, 0
	if p.paused {
		p.paused = false
		_ = p.l.Post(p.resume)
	}
	p.cond.Broadcast()
	return nil
}

// responseWriter is the http.ResponseWriter (and http.Flusher) of a
// FromHTTP handler: it buffers the response, and streams it from its
// first Flush or once it outgrows streamAt. Used on the handler's
// goroutine.
type responseWriter struct {
	header    http.Header
	snap      http.Header // header as it was when the head was fixed: the head's fields, as net/http's
	status    int
	body      bytes.Buffer
	ctx       context.Context
	out       *streamOut
	streaming bool  // the response went to out
	head      bool  // it answers HEAD
	h2        bool  // the request came on HTTP/2
	hijacked  bool  // Hijack took the connection: nothing more is written
	headDone  bool  // the head is fixed (WriteHeader, or the first Write): length is read
	length    int64 // the Content-Length the handler set by then; -1: none
	written   int64 // body bytes Write took
}

func (w *responseWriter) Header() http.Header { return w.header }

// WriteHeader sets the status. An interim one (1xx, such as 103 Early
// Hints) is not taken for the final status: as net/http does, it is sent
// at once, with the header as it is (Request.Inform; not Content-Length
// nor a field Inform refuses), and the header stays for the final
// response. 100 Continue is the server's own (it goes out when the
// handler reads the body its client holds back), and 101 is not served:
// neither is sent. Ignored once the final head is fixed.
func (w *responseWriter) WriteHeader(status int) {
	if w.hijacked {
		return
	}
	if status >= 100 && status < 200 {
		if status > 101 && !w.headDone {
			w.out.inform(status, interimFields(w.header))
		}
		return
	}
	if w.status == 0 {
		w.status = status
	}
	w.fixHead()
}

// fixHead fixes the head once it is written (WriteHeader, the first
// Write or Flush, or the handler's end): the status, 200 if none was set,
// and, as net/http has it, the Content-Length the handler declared by
// then as the length the body must have.
func (w *responseWriter) fixHead() {
	if w.status == 0 {
		w.status = 200
	}
	if w.headDone {
		return
	}
	w.headDone = true
	w.snap = w.header.Clone() // later changes are the trailer's, or nobody's
	w.length = -1
	if v := w.header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.length = n
		}
	}
}

// Write buffers or streams b. As net/http's, it takes no byte past the
// declared Content-Length (http.ErrContentLength), nor any for a status
// without content (204, 304: http.ErrBodyNotAllowed).
func (w *responseWriter) Write(b []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	w.fixHead()
	if !hasContent(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	var over error
	if w.length >= 0 && w.written+int64(len(b)) > w.length {
		b, over = b[:w.length-w.written], http.ErrContentLength
	}
	if !w.streaming && w.body.Len()+len(b) > streamAt {
		if err := w.streamWith(nil, b); err != nil {
			return 0, err
		}
	}
	var n int
	var err error
	if w.streaming {
		n, err = w.out.write(b)
	} else {
		n, err = w.body.Write(b)
	}
	w.written += int64(n)
	if err == nil {
		err = over
	}
	return n, err
}

// short reports whether the handler, done, wrote less than the
// Content-Length it declared: the response must be cut, as a stream
// short of its length is, not sent whole with the length it has.
func (w *responseWriter) short() bool {
	return w.length > w.written && !w.head && hasContent(w.status)
}

// EnableFullDuplex is what http.ResponseController calls: nil, as the
// handler reads its body while it writes its response already (it starts
// at the head: Duplex), on HTTP/1.1 as on HTTP/2. Over HTTP/1.1 a
// response that begins before its request's body has been read says
// Connection: close, as the rest of the body cannot be told from a next
// request's head once the handler stops reading.
func (w *responseWriter) EnableFullDuplex() error { return nil }

// Hijack takes the connection over (see FromHTTP): on HTTP/1.1, the
// connection's NetConn view and a bufio.ReadWriter on it, once the loop
// has handed it over; http.ErrNotSupported on HTTP/2; an error if the
// response has begun, or the request is not the connection's only one
// in progress or its body is still arriving; http.ErrHijacked the second
// time.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	switch {
	case w.hijacked:
		return nil, nil, http.ErrHijacked
	case w.headDone || w.streaming:
		return nil, nil, errors.New("httpd: Hijack after the response began")
	}
	nc, err := w.out.hijack(w.ctx)
	if err != nil {
		return nil, nil, err
	}
	w.hijacked = true
	return nc, bufio.NewReadWriter(bufio.NewReader(nc), bufio.NewWriter(nc)), nil
}

// Flush sends what was written so far and makes the response stream.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush that reports a client gone (http.ResponseController
// uses it).
func (w *responseWriter) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	w.fixHead()
	if !hasContent(w.status) {
		return nil // no body to stream: the head goes when the handler returns
	}
	if !w.streaming {
		return w.streamWith(nil, nil)
	}
	return w.out.flushErr()
}

// streamWith starts streaming the response with what is buffered, and
// trailer if it is known before the head is written; next, the Write
// that makes it stream, is sniffed for a Content-Type if nothing is
// buffered.
func (w *responseWriter) streamWith(trailer []Field, next []byte) error {
	w.fixHead()
	w.streaming = true
	first := w.body.Bytes()
	w.body = bytes.Buffer{} // first is the stream's now
	sniff := first
	if len(sniff) == 0 {
		sniff = next
	}
	return w.out.begin(w.ctx, w.status, w.fields(sniff, true), first, trailer, w.closes())
}

// response is the Response of what the handler wrote, buffered whole. The
// answer to HEAD that declared a Content-Length states it, whatever was
// written (as net/http's): the length of the body a GET would get
// (http.ServeContent sets it and writes nothing), which a Response with no
// Body may state (Request.length).
func (w *responseWriter) response() Response {
	w.fixHead()
	body := w.body.Bytes()
	if w.head && w.length >= 0 {
		body = nil
	}
	return Response{Status: w.status, Header: w.fields(w.body.Bytes(), w.head), Body: body, Close: w.closes()}
}

// closes reports whether the handler asked for the connection's end, as
// a net/http handler does: a Connection field with the "close" token
// (honoured by net/http on HTTP/1.1, and by a graceful GOAWAY on HTTP/2).
func (w *responseWriter) closes() bool {
	return httpguts.HeaderValuesContainsToken(w.snap["Connection"], "close")
}

// newlineToSpace turns CR and LF in a field value into spaces, as
// net/http's does; a value with neither comes back as it is, unallocated.
var newlineToSpace = strings.NewReplacer("\r", " ", "\n", " ")

// fields are the response's header fields as the head was fixed, cleaned
// as net/http cleans them (a name that is not a token is dropped, CR and
// LF in a value become spaces, the value is trimmed, and one still not
// valid is dropped, as net/http's HTTP/2 server drops it, as it drops
// the connection-specific Keep-Alive, Proxy-Connection and Upgrade), with a
// Content-Type sniffed from sniff when the handler set none (a nil one
// asks for none, and none is sniffed over a Content-Encoding, as in
// net/http), and with the Content-Length the handler declared (fixHead)
// if withLength: a stream must then be exactly that long, and the answer
// to HEAD states it.
func (w *responseWriter) fields(sniff []byte, withLength bool) []Field {
	var fields []Field
	for name, values := range w.snap {
		if !httpguts.ValidHeaderFieldName(name) {
			continue
		}
		switch http.CanonicalHeaderKey(name) {
		case "Content-Length", "Transfer-Encoding", "Connection", "Date":
			continue // the server's own
		case "Keep-Alive", "Proxy-Connection", "Upgrade":
			if w.h2 {
				continue // connection-specific: not on HTTP/2 (RFC 9113 §8.2.2), which net/http's drops too
			}
		}
		if strings.HasPrefix(name, http.TrailerPrefix) || w.declared(name) {
			continue // a trailer field (responseWriter.trailer)
		}
		for _, v := range values {
			// Trimmed as net/http's HTTP/1.1 server writes every head
			// value; on HTTP/2 too, where RFC 9113 §8.2.1 makes such
			// whitespace malformed (net/http's sends it as it is).
			v = textproto.TrimString(newlineToSpace.Replace(v))
			if httpguts.ValidHeaderFieldValue(v) {
				fields = append(fields, Field{name, v})
			}
		}
	}
	// Not over a Content-Encoding, as net/http: the bytes are not the
	// content's (gzip's magic would make it application/x-gzip).
	if _, typed := w.snap["Content-Type"]; !typed && len(sniff) > 0 && w.snap.Get("Content-Encoding") == "" {
		fields = append(fields, Field{"Content-Type", http.DetectContentType(sniff)})
	}
	if withLength && w.length >= 0 && hasContent(w.status) {
		fields = append(fields, Field{"Content-Length", strconv.FormatInt(w.length, 10)})
	}
	return fields
}

// trailer is the response's trailer once the handler has returned, as
// net/http makes it: the fields the Trailer header declared, with the
// values the handler set after the head, and the fields named with
// http.TrailerPrefix; nil when there are none. Fields a trailer may not
// carry are dropped, as net/http drops them.
func (w *responseWriter) trailer() []Field {
	var fields []Field
	add := func(name string, values []string) {
		for _, v := range values {
			if f := (Field{name, v}); checkTrailerField(f) == nil {
				fields = append(fields, f)
			}
		}
	}
	for name := range w.trailerNames() {
		add(name, w.header[name])
	}
	for name, values := range w.header {
		if k, ok := strings.CutPrefix(name, http.TrailerPrefix); ok {
			add(k, values)
		}
	}
	return fields
}

// trailerNames yields the names the head's Trailer field declares,
// canonical: one set after the head declares nothing, as in net/http.
func (w *responseWriter) trailerNames() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, v := range w.snap["Trailer"] {
			for name := range strings.SplitSeq(v, ",") {
				if name = strings.TrimSpace(name); name != "" && !yield(http.CanonicalHeaderKey(name)) {
					return
				}
			}
		}
	}
}

// declared reports whether the head's Trailer field declares name: its
// value, set once the body is written, is the trailer's, not the head's
// (as net/http has it, which takes the head when the body begins).
func (w *responseWriter) declared(name string) bool {
	if len(w.snap["Trailer"]) == 0 {
		return false // most responses: no work per field
	}
	name = http.CanonicalHeaderKey(name)
	for n := range w.trailerNames() {
		if n == name {
			return true
		}
	}
	return false
}
