package aio

import (
	"bytes"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/valkyria/aio/internal/sock"
)

// The net.Conn view of a Conn, for goroutine code: the loop reads into a
// bounded buffer of the view and the goroutines' Reads take from it; their
// Writes wait while the connection's write queue is above its high-water
// mark and post the bytes to the loop. The view has no goroutine: its
// waits are a mutex and two condition variables, which the loop's callbacks
// (OnRead, OnEOF, OnDrain, OnClose) and the deadlines' timers
// (time.AfterFunc, one per direction, re-armed in place) signal.

const (
	// netConnReadMax is how many read bytes a view holds before the
	// connection stops reading (it resumes once a Read brings the buffer
	// down to half): the kernel's receive buffer and TCP flow control hold
	// the rest back.
	netConnReadMax = 64 << 10
	// netConnWriteChunk is the most one post of a view's Write carries, so
	// that a large Write waits for the queue between pieces instead of
	// queueing all of itself at once.
	netConnWriteChunk = 64 << 10
	// netConnLinger bounds how long a view's Close lets the write queue
	// flush before the connection closes, when no write deadline is set.
	netConnLinger = 10 * time.Second
)

// netViews maps each Conn that has a view to it, so that NetConn returns
// the same view on every call. An entry leaves when its connection closes
// (the view's OnClose), which every view sees, even one made after the
// close.
var netViews sync.Map // *Conn → *netConn

// NetConn returns a net.Conn view of the connection, for goroutine code:
// io.Copy, bufio, net/textproto, crypto/tls, net/http and the other
// libraries that take a net.Conn work on it. It is made on the first call,
// and later calls return the same view until the connection closes.
//
// The view takes the connection's OnRead, OnEOF, OnDrain and OnClose
// callbacks over (setting them afterwards breaks it; bytes an OnFrame
// framer still holds come first, as to a new OnRead), and sets
// ConnConfig.ReadWhileFull: as with package net, reading and writing have
// independent flow control.
//
//   - Read returns what the loop has read, blocking until there is
//     something, then io.EOF once the peer has finished sending. The loop
//     reads ahead into a buffer of the view, up to 64 KiB, then pauses
//     reading until Read has drained half of it.
//   - Write blocks while the connection's write queue is above
//     ConnConfig.HighWater and then queues the bytes (in pieces of at most
//     64 KiB, so that a large Write waits between them): a goroutine that
//     writes faster than the peer reads is held back, as by a socket's
//     buffer. Writes from several goroutines are not interleaved.
//   - SetDeadline, SetReadDeadline and SetWriteDeadline work as package
//     net's: a Read or Write blocked, or called, past its deadline returns
//     an error for which errors.Is(err, os.ErrDeadlineExceeded) holds and
//     whose Timeout is true (the Write returning how much it queued), and a
//     new deadline, or none, makes them work again.
//   - Close makes Reads and Writes, blocked or not, return an error for
//     which errors.Is(err, net.ErrClosed) holds, and closes the connection
//     once what was written has reached the kernel (as closing a socket
//     lets the kernel send what it holds): at the write deadline if one is
//     set, else within 10 seconds at most, if the peer does not read; a
//     connection closed with written bytes still queued is reset, so that
//     its peer sees the stream cut, not a clean end. It does not wait for
//     that: Conn.Closed tells when it happened. A second Close returns an
//     error.
//   - CloseWrite half-closes: the peer gets EOF once the bytes written
//     before have been sent. SyscallConn is the Conn's.
//   - The view holds the connection busy (a running handle in its Scope)
//     until its Close: the goroutine code that uses it is the
//     connection's work, which the loop cannot see. A drain
//     (Listener.Drain, Runtime.Shutdown) leaves the connection to it until
//     then, rather than cutting it mid-stream; when the drain's time is
//     up, the connection closes and Read and Write say so
//     (errors.Is(err, ErrStopped) after Stop, ErrCancelled after a drain's
//     grace, and net.ErrClosed for both). So end the goroutine code first:
//     a net/http Server on views closes its idle keep-alive connections in
//     its Shutdown, a Transport in CloseIdleConnections; a view left open
//     holds Runtime.Shutdown until its context ends (forever for one
//     without a deadline).
//
// Errors are *net.OpError, as package net's, wrapping the cause: a
// deadline, ErrConnClosed after Close, ErrWriteClosed; once the connection
// has closed with an error (a reset from the peer, a timeout), an error
// that says the connection closed and wraps that cause, which errors.Is
// finds (a Write after a read saw a reset: "write tcp A->B: aio: tcp
// connection closed: aio: tcp read B: connection reset by peer").
// The methods may be called from any goroutine at once, except that Read
// and Write, which block, return ErrAwaitOnLoop on the connection's loop:
// use the Conn's callbacks there. (On another loop they would block it:
// don't.)
//
// The view of a TLS connection is a net.Conn, not a *tls.Conn: code that
// asks for the latter sees plain bytes. net/http's Transport given one by
// DialTLSContext leaves Response.TLS nil and cannot see that ALPN chose
// h2, so a Dialer.TLS for it must not offer "h2" (it would speak HTTP/1.1
// on an HTTP/2 connection); Conn.TLS has the handshake's state.
//
// The view is for compatibility, not speed: every hand-off between the
// loop and a goroutine crosses threads, so a small request and its reply
// cost four thread wakeups (a round trip of about 100 µs where two package
// net goroutines take 15 µs, BenchmarkNetConnPingPong), and streaming
// moves about two thirds of package net's bytes per second. Config.Spin
// does not help: the goroutine a spinning loop readies waits behind it.
func (c *Conn) NetConn() net.Conn {
	if v, ok := netViews.Load(c); ok {
		return v.(*netConn)
	}
	v := &netConn{c: c, laddr: net.TCPAddrFromAddrPort(c.laddr), raddr: net.TCPAddrFromAddrPort(c.raddr)}
	v.rcond.L = &v.mu
	v.wcond.L = &v.mu
	if old, loaded := netViews.LoadOrStore(c, v); loaded {
		return old.(*netConn)
	}
	c.l.runInline(v.attach)
	return v
}

// netConn is a Conn's net.Conn view: see NetConn.
type netConn struct {
	c            *Conn
	laddr, raddr *net.TCPAddr // immutable

	wmu sync.Mutex // held by a Write for its whole length: Writes do not interleave

	mu    sync.Mutex
	rcond sync.Cond // a Read may go on: bytes, EOF, close, deadline
	wcond sync.Cond // a Write may go on: the queue went down, close, deadline
	// Under mu.
	buf     []byte // read bytes not yet taken: buf[r:]
	r       int
	paused  bool  // the view paused reading: buf is full
	eof     bool  // the peer has finished sending
	gone    bool  // the connection has closed
	cerr    error // the error it closed with (nil: closed or ended in order)
	closed  bool  // the view's Close was called
	wshut   bool  // the view's CloseWrite was called
	pending int   // bytes posted by Writes, not yet queued on the loop
	rdl     deadline
	wdl     deadline
}

// deadline is one direction's deadline: at, and whether it has passed.
// Under the view's mu.
type deadline struct {
	at      time.Time // zero: none
	expired bool
	t       *time.Timer // fires at at, made on first use
}

// set sets the deadline of v's direction whose waits cond wakes to at: a
// future at arms the timer, which calls v.fire. The timer and its closure
// are made the first time one is armed, so that setting a deadline again
// (net/http does for every request) allocates nothing.
func (d *deadline) set(at time.Time, v *netConn, cond *sync.Cond) {
	d.at = at
	d.expired = !at.IsZero() && !time.Now().Before(at)
	switch {
	case at.IsZero() || d.expired:
		d.stop()
	case d.t == nil:
		d.t = time.AfterFunc(time.Until(at), func() { v.fire(d, cond) })
	default:
		d.t.Reset(time.Until(at))
	}
}

// due marks the deadline expired if it has passed (its timer fired; a
// deadline moved meanwhile is not), and reports whether it did.
func (d *deadline) due() bool {
	if d.at.IsZero() || time.Now().Before(d.at) {
		return false
	}
	d.expired = true
	return true
}

func (d *deadline) stop() {
	if d.t != nil {
		d.t.Stop()
	}
}

// attach installs the view's callbacks. On the loop.
func (v *netConn) attach() {
	c := v.c
	c.l.checkOnLoop()
	if c.state != connClosed {
		c.onEOF = v.onEOF
		c.queue().onDrain = v.onDrain
		c.readWhileFull, c.held = true, false
		// As OnRead: bytes a framer (OnFrame) still holds come to the view
		// first, and the interest is updated.
		c.setOnRead(v.onRead)
		if c.eof { // read before the view took over
			v.onEOF(c)
		}
		// The goroutine code that uses the view is the connection's work,
		// which a drain cannot see: a promise no one settles holds the
		// scope busy until the connection closes, which cancels it.
		Adopt(c.Scope(), NewPromise[struct{}](c.l).Handle())
	}
	c.setOnClose(v.onClose)
}

// onRead keeps b for Read, pausing the connection when the buffer is full.
// On the loop.
func (v *netConn) onRead(c *Conn, b []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return // nobody will read it: dropped, as by a closed socket
	}
	if v.r == len(v.buf) {
		v.buf, v.r = v.buf[:0], 0
	} else if v.r > 0 && cap(v.buf)-len(v.buf) < len(b) {
		n := copy(v.buf, v.buf[v.r:])
		v.buf, v.r = v.buf[:n], 0
	}
	v.buf = append(v.buf, b...)
	if !v.paused && len(v.buf)-v.r >= netConnReadMax {
		v.paused = true
		_ = c.PauseRead() // on the loop: at once
	}
	v.rcond.Broadcast()
}

// onEOF notes the peer's FIN. On the loop.
func (v *netConn) onEOF(*Conn) {
	v.mu.Lock()
	v.eof = true
	v.dropIfRead()
	v.rcond.Broadcast()
	v.mu.Unlock()
}

// dropIfRead lets go of the read buffer once it has been read and no byte
// can follow (the peer's FIN, or the connection gone): it is 64 KiB or
// more, and the goroutine code may keep the view for long before its
// Close, or forget it. Under mu.
func (v *netConn) dropIfRead() {
	if (v.eof || v.gone) && v.r == len(v.buf) {
		v.buf, v.r = nil, 0
	}
}

// onDrain wakes a Write waiting for the queue. On the loop.
func (v *netConn) onDrain(*Conn) {
	v.mu.Lock()
	v.wcond.Broadcast()
	v.mu.Unlock()
}

// onClose notes the connection's end. On the loop.
func (v *netConn) onClose(c *Conn, err error) {
	v.mu.Lock()
	v.gone, v.cerr = true, err
	v.dropIfRead()
	v.rdl.stop()
	v.wdl.stop()
	v.rcond.Broadcast()
	v.wcond.Broadcast()
	v.mu.Unlock()
	netViews.CompareAndDelete(c, v)
}

// Read reads what the loop has read: see NetConn.
func (v *netConn) Read(p []byte) (int, error) {
	if v.c.l.OnLoop() {
		return 0, v.opError("read", ErrAwaitOnLoop)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for {
		switch {
		case v.closed:
			return 0, v.opError("read", ErrConnClosed)
		case v.rdl.expired:
			return 0, v.opError("read", os.ErrDeadlineExceeded)
		case len(p) == 0:
			return 0, nil
		case v.r < len(v.buf):
			n := copy(p, v.buf[v.r:])
			v.r += n
			v.dropIfRead()
			if v.paused && len(v.buf)-v.r <= netConnReadMax/2 {
				v.paused = false
				_ = v.c.ResumeRead() // posted; an error means closed, which onClose tells
			}
			return n, nil
		case v.eof:
			return 0, io.EOF
		case v.gone:
			return 0, v.opError("read", v.closeCause())
		}
		v.rcond.Wait()
	}
}

// closeCause is what a Read or Write reports once the connection has
// closed. Under mu.
func (v *netConn) closeCause() error {
	switch {
	case v.cerr == nil:
		return ErrConnClosed
	case v.cerr == errConnStopped, v.cerr == errDrainDeadline:
		return v.cerr // it says so already
	}
	return &closedByError{v.cerr}
}

// closedByError is the error of a view's Read or Write on a connection that
// closed with an error: the view's methods never touch the socket, so the
// cause is the loop's, and often of the other direction (a Write that finds
// the connection closed by a read's reset). Its text says the connection
// had closed, then why; errors.Is finds the cause, and Timeout is the
// cause's, as it was when the cause was reported bare.
type closedByError struct{ cause error }

func (e *closedByError) Error() string { return ErrConnClosed.Error() + ": " + e.cause.Error() }
func (e *closedByError) Unwrap() error { return e.cause }

// Timeout is net.Error's: the cause's.
func (e *closedByError) Timeout() bool {
	t, ok := e.cause.(interface{ Timeout() bool })
	return ok && t.Timeout()
}

// Temporary is net.Error's (deprecated there): as Timeout.
func (e *closedByError) Temporary() bool { return e.Timeout() }

// Write queues b, waiting while the write queue is full: see NetConn.
func (v *netConn) Write(b []byte) (int, error) {
	c := v.c
	if c.l.OnLoop() {
		return 0, v.opError("write", ErrAwaitOnLoop)
	}
	v.wmu.Lock()
	defer v.wmu.Unlock()
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for {
		var err error
		switch {
		case v.closed:
			err = ErrConnClosed
		case v.wdl.expired:
			err = os.ErrDeadlineExceeded
		case v.gone:
			err = v.closeCause()
		case v.wshut || c.wshut.Load():
			err = ErrWriteClosed
		}
		if err != nil {
			return n, v.opError("write", err)
		}
		if n == len(b) {
			return n, nil
		}
		// The queue's bytes and those on their way to it, against the
		// high-water mark: onDrain, or the post arriving, wakes this.
		if v.pending+c.Buffered() > int(c.hw) {
			v.wcond.Wait()
			continue
		}
		piece := bytes.Clone(b[n:min(len(b), n+netConnWriteChunk)])
		v.pending += len(piece)
		c.l.post(func() { v.queue(piece) })
		n += len(piece)
	}
}

// queue writes a piece of a Write. On the loop.
func (v *netConn) queue(b []byte) {
	_, _ = v.c.write(b, true) // an error closes the connection: onClose tells
	v.mu.Lock()
	v.pending -= len(b)
	v.wcond.Broadcast()
	v.mu.Unlock()
}

// Close closes the view, and the connection once its queue has flushed:
// see NetConn.
func (v *netConn) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return v.opError("close", ErrConnClosed)
	}
	v.closed = true
	v.buf, v.r = nil, 0
	linger := netConnLinger
	if !v.wdl.at.IsZero() {
		linger = time.Until(v.wdl.at)
	}
	v.rdl.stop()
	v.wdl.stop()
	v.rcond.Broadcast()
	v.wcond.Broadcast()
	v.mu.Unlock()
	v.c.l.runInline(func() { v.lingerClose(linger) })
	return nil
}

// lingerClose closes the connection once the write queue has reached the
// kernel, or after linger. It keeps reading meanwhile (onRead drops the
// bytes), so that the peer is not stalled and the close is a FIN, not the
// reset a close with unread bytes sends. On the loop.
func (v *netConn) lingerClose(linger time.Duration) {
	c := v.c
	c.l.checkOnLoop()
	if c.state != connOpen {
		return
	}
	if c.queued.Load() == 0 {
		c.closeWith(nil)
		return
	}
	if linger <= 0 {
		v.cut()
		return
	}
	_ = c.ResumeRead()
	Finally(Within(c.Flush(), linger), func() {
		if c.state == connOpen && c.queued.Load() > 0 {
			v.cut()
			return
		}
		c.closeWith(nil)
	})
}

// cut closes the connection with bytes the view's Writes counted still
// queued: with a reset, not a FIN, so that the peer sees its stream end
// short instead of a clean end (a *net.TCPConn's Write counts only what
// the kernel took, which its close still sends). On the loop.
func (v *netConn) cut() {
	c := v.c
	_ = sock.SetResetOnClose(c.fd)
	c.closeWith(nil)
}

// CloseWrite half-closes the connection: see NetConn.
func (v *netConn) CloseWrite() error {
	v.mu.Lock()
	closed := v.closed
	// Writes already posted are ahead of the FIN (posts keep their order);
	// later ones fail.
	v.wshut = true
	v.mu.Unlock()
	if closed {
		return v.opError("close", ErrConnClosed)
	}
	v.c.CloseWrite()
	return nil
}

// LocalAddr returns the connection's local address, a *net.TCPAddr.
func (v *netConn) LocalAddr() net.Addr { return v.laddr }

// RemoteAddr returns the peer's address, a *net.TCPAddr.
func (v *netConn) RemoteAddr() net.Addr { return v.raddr }

// SetDeadline sets both deadlines: see NetConn.
func (v *netConn) SetDeadline(t time.Time) error { return v.setDeadline(t, true, true) }

// SetReadDeadline sets the deadline of Reads: see NetConn.
func (v *netConn) SetReadDeadline(t time.Time) error { return v.setDeadline(t, true, false) }

// SetWriteDeadline sets the deadline of Writes: see NetConn.
func (v *netConn) SetWriteDeadline(t time.Time) error { return v.setDeadline(t, false, true) }

func (v *netConn) setDeadline(t time.Time, read, write bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return v.opError("set", ErrConnClosed)
	}
	if read {
		v.rdl.set(t, v, &v.rcond)
		v.rcond.Broadcast()
	}
	if write {
		v.wdl.set(t, v, &v.wcond)
		v.wcond.Broadcast()
	}
	return nil
}

// fire runs when a deadline's timer fires: the waits it bounds end if it
// has passed. On the timer's goroutine.
func (v *netConn) fire(d *deadline, cond *sync.Cond) {
	v.mu.Lock()
	if d.due() {
		cond.Broadcast()
	}
	v.mu.Unlock()
}

// SyscallConn returns the Conn's (see Conn.SyscallConn).
func (v *netConn) SyscallConn() (syscall.RawConn, error) { return v.c.SyscallConn() }

func (v *netConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: v.laddr, Addr: v.raddr, Err: err}
}
