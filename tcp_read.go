package aio

import (
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// maxReadsPerEvent bounds the reads of one connection per readiness event, so
// that a fast sender cannot keep the loop on one socket.
const maxReadsPerEvent = 16

// OnRead sets the read callback and starts reading. fn runs on the loop with
// the bytes that arrived; b is the loop's shared read buffer (ReadBufferSize
// bytes, used by every connection of the loop) and is valid only until fn
// returns: copy what you keep. Passing b to Write is fine (it copies
// what the kernel does not take at once). A panic in fn closes the
// connection with a *PanicError. Replacing OnFrame, fn first receives the
// bytes the framer still holds. When the peer finishes sending, OnEOF
// says what happens (by default the connection waits for the replies in
// its Scope, then closes). Any goroutine; ErrNilFunc for nil,
// ErrConnClosed after the connection closed.
func (c *Conn) OnRead(fn func(c *Conn, b []byte)) error {
	if fn == nil {
		return ErrNilFunc
	}
	if c.l.OnLoop() { // the common case (an accept callback) without a closure
		if c.state == connClosed {
			return ErrConnClosed
		}
		c.setOnRead(fn)
		return nil
	}
	return c.runInlineIfOpen(func() { c.setOnRead(fn) })
}

// OnEOF sets the callback that runs, on the loop, when the peer has finished
// sending (its FIN arrived after the last byte). The connection stays open
// for writing: fn may write a reply, then CloseWrite or Close. Once both
// directions are finished (EOF seen and CloseWrite flushed) the connection
// closes by itself.
//
// Without OnEOF the connection ends politely, since a FIN is only a
// half-close and the peer may still be reading: once the handles adopted
// into its Scope (the replies its requests started: adopt the handle that
// writes the reply) have finished and the write queue is flushed, it sends
// FIN and closes. A peer that is really gone (a reset, or a write that
// fails) closes the connection at once and cancels that work; a protocol
// in which a FIN means the client is gone says so with OnEOF(Close).
//
// A connection reads, and so sees its peer's FIN, only once it has a reader
// (OnRead, OnFrame) and while reading is not paused. A dialed connection
// kept idle for reuse (a pool) keeps a reader (one that treats bytes it
// did not ask for as an error) and OnEOF(Close), and watches Closed, so
// that one its peer closed while it was idle is noticed, not reused. Any
// goroutine; ErrNilFunc for nil.
func (c *Conn) OnEOF(fn func(c *Conn)) error {
	if fn == nil {
		return ErrNilFunc
	}
	return c.runInlineIfOpen(func() { c.onEOF = fn })
}

// PauseRead stops reading until ResumeRead: the kernel's receive buffer fills
// and TCP flow control slows the peer down. Called from OnRead, it takes
// effect after that callback returns: no further bytes are delivered. Any
// goroutine.
func (c *Conn) PauseRead() error { return c.runInlineIfOpen(func() { c.paused = true; c.update() }) }

// ResumeRead resumes reading, whatever held it back: PauseRead, or a full
// write queue (ConnConfig.ReadWhileFull unset, or crypto/tls's answers
// on TLS), which then holds reading back again only once it has drained
// and filled anew, or (TLS) at the next answer written on it. Reading
// after EOF cannot resume. Any goroutine.
func (c *Conn) ResumeRead() error {
	return c.runInlineIfOpen(func() { c.paused, c.held = false, false; c.update() })
}

func (c *Conn) callRead(b []byte) {
	defer c.guard()
	c.onRead(c, b)
}

// callReadCorked calls the read callback with b, its small writes
// gathered and sent as one when it returns (see corkHeld). On the loop.
func (c *Conn) callReadCorked(b []byte) {
	c.cork = corkArmed
	c.callRead(b)
	c.uncork()
	c.cork = corkNone
}

// reading reports whether the connection wants to read. On the loop.
func (c *Conn) reading() bool {
	c.l.checkOnLoop()
	return c.state == connOpen && c.onRead != nil && !c.paused && !c.held && !c.eof &&
		(c.fr == nil || !c.fr.held) && // frames held back go first (tcp_frame.go)
		(c.tls == nil || !c.tls.throttled) // its turn's records are read (tls_turn.go)
}

// readSome reads until the socket is drained, the connection stops reading,
// or maxReadsPerEvent reads were made.
func (c *Conn) readSome() {
	buf := *c.tl.buf
	for i := 0; i < maxReadsPerEvent; i++ {
		n, err := sock.Read(c.fd, buf)
		switch {
		case err == nil && n > 0:
			c.read(n)
			if t := c.tls; t != nil {
				t.input(buf[:n]) // ciphertext: tls.go delivers the plaintext
			} else {
				c.callReadCorked(buf[:n])
			}
			if n < len(buf) || !c.reading() {
				return
			}
		case err == nil:
			if t := c.tls; t != nil {
				t.inputEOF() // the plaintext's end is tls.go's to tell
				return
			}
			c.gotEOF()
			return
		case errnoIs(err, unix.EAGAIN):
			return
		case errnoIs(err, unix.EINTR):
		default:
			c.closeWith(c.ioError("read", err))
			return
		}
	}
}

// read accounts for n bytes read from the socket: the counter, the read
// and idle timeouts. A connection whose timeouts are only others (a
// WriteTimeout, a Linger) reads no clock here, as sent does not for
// reads; SetReadTimeout and SetIdleTimeout count from their call. On the
// loop.
func (c *Conn) read(n int) {
	c.tl.bytesIn.Add(uint64(n))
	if to := c.to; to != nil && to.read|to.idle != 0 {
		now := c.l.clock()
		to.lastRead, to.lastIO = now, now
	}
}

// gotEOF handles the peer's FIN. Without OnEOF, the connection ends
// politely: it half-closes once the work its scope holds (the replies its
// requests started) has finished and the queue is flushed, then closes.
func (c *Conn) gotEOF() {
	if c.fr != nil && !c.framesEOF() {
		return // the framer's last frames come first (tcp_frame.go)
	}
	c.eof = true
	c.update() // reading stops
	switch {
	case c.onEOF != nil:
		c.callback(c.onEOF)
		c.maybeFinish()
	case c.scope.Load().busy():
		c.endAfterWork = true // see scopeIdle
	default:
		c.endAfterEOF()
	}
}

// endAfterEOF ends a connection whose peer finished sending and whose work
// is done: at once if nothing is queued, else after the flush and FIN.
func (c *Conn) endAfterEOF() {
	if c.queued.Load() == 0 {
		c.closeWith(nil)
		return
	}
	c.closeWrite(nil)
}
