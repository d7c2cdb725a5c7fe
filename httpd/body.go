package httpd

import (
	"context"
	"errors"
	"io"

	"github.com/valkyria/aio"
)

// Body is a request's body. One that fits in the arena's room after the
// head (Content-Length known, or chunked and small) arrives with the
// request, before the handler runs: Bytes returns it (unless the handler
// is Duplex and the body did not come with the head: it starts at the
// head). A larger one streams
// to the handler, which reads it with OnData; until it does, and while it
// has paused, the connection does not read (TCP flow control holds the
// client back). Either way, OnData works, and ReadAll collects the whole
// body in one handle.
//
// A streamed body that the handler leaves unread, wholly or in part, when
// its response is written is not read on its behalf: on HTTP/1.1 that
// response says "Connection: close", and the rest of the body is read and
// dropped while the connection lingers, then it closes (net/http's server
// reads up to 256 KiB of such a body to keep the connection; here a
// client that sends bodies nobody reads pays for a new connection, and
// the server for nothing it did not ask for). On HTTP/2 the stream ends
// and the connection goes on.
//
// A Body kept past the end of its request (by a timer or a goroutine's
// Post the handler did not adopt into Request.Scope) is empty, as a Stream
// is closed then: Bytes returns nil and false, Length 0, OnData, Pause and
// Resume do nothing and CopyTo fails with ErrBodyRead, whatever request
// the Request's slot serves by then. (The Request itself is not guarded so:
// see Request.) A Body is a small value that names its request: copies
// are the same body, and the zero Body is empty.
//
// On the loop.
type Body struct {
	r   *Request
	seq uint64 // the request it was made for (Request.live)
}

// bodyState is a Request's body, in its slab slot: what the engines read
// and write. The handler holds a Body, which finds it only while its
// request lives. Owned by the loop.
type bodyState struct {
	r        *Request
	length   int64  // Content-Length; -1 for chunked; 0 for none
	buffered bool   // the whole body is data
	data     []byte // the whole body (buffered), or its first bytes (a chunked body that outgrew the arena), in the arena
	fn       func(p []byte, end bool)
	paused   bool
	done     bool // the end was delivered (or will be, posted)
	prefix   bool // data still to be delivered before the live bytes
	held     bool // CopyTo or ReadAll reads the body: OnData leaves their reader alone
}

// state returns the body's state in its request, or nil once the request
// has ended: its Request went back to the slab, and may serve another
// request by now. On the loop.
func (b Body) state() *bodyState {
	if b.r == nil {
		return nil // the zero Body
	}
	b.r.checkLoop()
	if !b.r.live(b.seq) {
		return nil
	}
	return &b.r.body
}

// Bytes returns the whole body and true when it arrived with the request
// (an empty body too), or nil and false when it streams (OnData). The
// bytes are in the arena: valid until the request ends, and clipped to
// their length, so that an append copies them rather than write over
// what follows them there (a trailer, the handler's Alloc).
func (b Body) Bytes() ([]byte, bool) {
	if s := b.state(); s != nil {
		return s.bytes()
	}
	return nil, false
}

func (b *bodyState) bytes() ([]byte, bool) {
	if b.buffered {
		return b.data, true
	}
	return nil, false
}

// Length returns the body's Content-Length: 0 without a body, -1 for a
// chunked body (whose length is unknown until its end).
func (b Body) Length() int64 {
	if s := b.state(); s != nil {
		return s.length
	}
	return 0
}

// OnData sets the function that receives the body, on the loop, in
// order: p is the next piece (valid only until fn returns: copy what you
// keep) and end is true for the last call (p may then be empty). A
// buffered body comes in one call. fn never runs inside OnData. Setting it
// starts the body's flow (and sends "100 Continue" to a client waiting for
// it). A second call replaces fn; a call after CopyTo or ReadAll does
// nothing (their handles would otherwise never end).
func (b Body) OnData(fn func(p []byte, end bool)) {
	if s := b.state(); s != nil && !s.held {
		s.onData(fn)
	}
}

func (b *bodyState) onData(fn func(p []byte, end bool)) {
	if fn == nil || b.done {
		return
	}
	first := b.fn == nil
	b.fn = fn
	r, seq := b.r, b.r.seq
	switch {
	case b.buffered:
		b.done = true
		_ = r.ls.l.Post(func() {
			if r.live(seq) {
				fn := b.fn
				b.fn = bodyDelivered // its last call (see deliver)
				fn(b.data, true)
			}
		})
	case first && b.prefix:
		_ = r.ls.l.Post(func() {
			if !r.live(seq) {
				return
			}
			b.prefix = false
			if b.fn != nil && len(b.data) > 0 {
				b.fn(b.data, false)
			}
			if !b.paused {
				r.eng.bodyDemand(r)
			}
		})
	case !b.paused:
		b.r.eng.bodyDemand(b.r)
	}
}

// Pause stops the delivery of the body until Resume: the connection stops
// reading. For a handler that sends the body on somewhere slower. On the
// loop.
//
// While an HTTP/1 body is paused, so is all reading of its connection: a
// client that resets is noticed at once (its handler cancelled), but one
// that closes (a FIN, behind body bytes not read yet) only once reading
// resumes and reaches it, and no timeout runs meanwhile (HeaderTimeout
// times a body's pauses only while its handler reads). A handler that
// pauses on something that may never come back bounds its wait itself
// (Within).
// Over HTTP/2 a pause holds back one stream's window only: the others,
// and a client's close, go on being read.
func (b Body) Pause() {
	if s := b.state(); s != nil {
		s.paused = true
	}
}

// Resume resumes the delivery that Pause stopped. On the loop.
func (b Body) Resume() {
	if s := b.state(); s != nil {
		s.resume()
	}
}

func (b *bodyState) resume() {
	if !b.paused {
		return
	}
	b.paused = false
	if b.fn != nil && !b.buffered && !b.prefix {
		b.r.eng.bodyDemand(b.r)
	}
}

// ready reports whether the body can take live bytes now.
func (b *bodyState) ready() bool { return b.fn != nil && !b.paused && !b.prefix }

// deliver passes live body bytes to the handler.
func (b *bodyState) deliver(p []byte, end bool) {
	fn := b.fn
	if end {
		b.done = true
		// Its last call: the request, which may go on long after, keeps
		// neither fn nor what it holds (ReadAll's bytes). A reader stays
		// set (ready, read) as far as the engines can tell.
		b.fn = bodyDelivered
	}
	fn(p, end)
}

// bodyDelivered is a body's reader once its end has been delivered.
func bodyDelivered([]byte, bool) {}

// ErrBodyRead is what CopyTo and ReadAll fail with when the body already
// has a reader (OnData, or an earlier CopyTo or ReadAll), or its request
// has ended.
var ErrBodyRead = errors.New("httpd: the body already has a reader")

// unread returns the body's request and state when nothing has read it
// yet (no OnData, CopyTo or ReadAll) and its request goes on, else a nil
// state; l is the loop for a handle that fails (nil for the zero Body).
func (b Body) unread() (r *Request, s *bodyState, l *aio.Loop) {
	r = b.r
	if r != nil {
		l = r.ls.l
	}
	if s = b.state(); s != nil && (s.fn != nil || s.done) {
		s = nil
	}
	return r, s, l
}

// CopyTo copies the body to w on the loop's Work pool (a file, a
// compressor, a client of another service: anything that blocks) and
// returns a handle to the number of bytes written, in place of OnData.
// The body flows at once; while more than 256 KiB of it wait for w, the
// connection does not read, so a slow w holds the client back instead of
// filling memory. The handle fails with w's first error (the rest of the
// body is then dropped as it arrives), or at once with ErrBodyRead when
// OnData, CopyTo or ReadAll was called before or the request has ended.
//
// The handle is in the request's scope: a client that goes away, or a
// request that ends while the copy runs, cancels it. A cancelled copy
// stops at its next chunk, but a Write already running runs to its end:
// w may see that one Write after the handle has ended cancelled.
//
// The copy holds one of the pool's goroutines (aio.Config.WorkPool, 4 by
// default) until the body has ended, however slowly its client sends:
// beyond the pool's size, uploads, and every other Work of the loop, wait
// in its queue (aio.Stats.WorkQueued). Size the pool for the uploads in
// progress at once, as for FromHTTP's handlers.
//
// On the loop.
func (b Body) CopyTo(w io.Writer) *aio.Handle[int64] {
	r, s, l := b.unread()
	if s == nil {
		return aio.Fail[int64](l, ErrBodyRead)
	}
	s.held = true
	p := newBodyPipe(r, nil)
	p.started = true
	p.start()
	h := aio.Work(r.ls.l, func(ctx context.Context) (int64, error) {
		defer context.AfterFunc(ctx, func() { _ = p.Close() })()
		n, err := p.WriteTo(w)
		_ = p.Close() // on an error of w: drop the rest
		return n, err
	})
	return aio.Adopt(r.Scope(), h)
}

// readAllFirstCap bounds the room ReadAll makes for a streamed body ahead
// of its bytes: a Content-Length is the client's claim, not its bytes.
const readAllFirstCap = 64 << 10

// ReadAll returns a handle to the whole body (empty, not nil, for none),
// in place of OnData: at once when it arrived with the request (the bytes
// Bytes returns, in the arena, valid until the request ends), else once
// it has streamed in, collected into memory of its own. The body's limit
// bounds that memory: a body that outgrows Config.MaxBodyBytes or a
// MaxBytesHandler's limit is answered 413 and the handler's handle
// cancelled, as with OnData; with no limit, nothing bounds it (net/http's
// io.ReadAll(r.Body) likewise). The handle fails at once with ErrBodyRead
// when OnData, CopyTo or ReadAll was called before or the request has
// ended.
//
// The handle is in the request's scope: a client that goes away cancels
// it. A cancelled ReadAll drops the rest of the body as it arrives.
//
// On the loop.
func (b Body) ReadAll() *aio.Handle[[]byte] {
	r, s, l := b.unread()
	if s == nil {
		return aio.Fail[[]byte](l, ErrBodyRead)
	}
	if p, ok := s.bytes(); ok {
		if p == nil {
			p = []byte{} // as for an empty body that streamed: never nil
		}
		s.done = true // read: a later reader fails as after OnData
		return aio.Adopt(r.Scope(), aio.Pure(r.ls.l, p))
	}
	s.held = true
	p := aio.NewPromise[[]byte](r.ls.l)
	h := aio.Adopt(r.Scope(), p.Handle())
	buf := make([]byte, 0, min(max(s.length, 0), readAllFirstCap)) // never nil, even empty
	// Cancelled, it lets go of what it collected at once: the client may
	// send nothing more for a long while (the handler answers later).
	h.OnCancel(func() { buf = nil })
	s.onData(func(piece []byte, end bool) {
		switch {
		case h.Cancelled():
			buf = nil // the rest is dropped as it arrives
		case end:
			p.Resolve(append(buf, piece...))
		default:
			buf = append(buf, piece...)
		}
	})
	return h
}
