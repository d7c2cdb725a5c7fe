package aio

import (
	"errors"

	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// CloseWrite half-closes the connection: once the write queue is flushed it
// sends FIN (shutdown(SHUT_WR)); reading goes on. It returns a handle that
// completes when FIN was sent (fails if the connection closes first). Write
// fails with ErrWriteClosed afterwards. If EOF was already read, the
// connection closes once FIN is sent. On a TLS connection it writes
// close_notify first, after the plaintext written before it: the polite
// end of a TLS stream (see Close). Idempotent; any goroutine.
func (c *Conn) CloseWrite() *Handle[struct{}] {
	l := c.l
	if !l.OnLoop() {
		h := runningHandle(c.l)
		l.runLater(func() { c.closeWrite(h) })
		return h
	}
	if t := c.tls; t != nil {
		t.closeNotify() // close_notify goes before the FIN
	}
	switch {
	case c.state != connOpen:
		return Fail[struct{}](l, ErrConnClosed)
	case c.wdone:
		return Pure(l, struct{}{})
	case c.queued.Load() == 0 && c.splicedTo() == 0:
		c.wshut.Store(true)
		c.shutdown()
		if c.wdone {
			return Pure(l, struct{}{})
		}
		return Fail[struct{}](l, ErrConnClosed) // shutdown failed and closed it
	}
	h := runningHandle(c.l)
	c.closeWrite(h)
	return h
}

// closeWrite half-closes now or after the flush; h (may be nil) completes
// then. On the loop.
func (c *Conn) closeWrite(h *Handle[struct{}]) {
	c.l.checkOnLoop()
	switch {
	case c.state != connOpen:
		if h != nil {
			h.settle(struct{}{}, ErrConnClosed)
		}
		return
	case c.wdone:
		if h != nil {
			h.settle(struct{}{}, nil)
		}
		return
	}
	if t := c.tls; t != nil {
		t.closeNotify() // close_notify goes before the FIN
		if c.state != connOpen {
			if h != nil {
				h.settle(struct{}{}, ErrConnClosed)
			}
			return
		}
	}
	c.wshut.Store(true)
	if h != nil {
		q := c.queue()
		q.shutWaiters = append(q.shutWaiters, h)
	}
	if c.queued.Load() == 0 && c.splicedTo() == 0 {
		c.shutdown()
	}
}

// shutdown sends FIN and completes the CloseWrite handles. On the loop.
func (c *Conn) shutdown() {
	c.l.checkOnLoop()
	if err := unix.Shutdown(c.fd, unix.SHUT_WR); err != nil {
		c.closeWith(c.ioError("shutdown", err))
		return
	}
	c.wdone = true
	if c.draining && c.paused {
		c.paused = false // drainIdle's pause ends: the linger reads
		c.update()
	}
	if q := c.q; q != nil {
		hs := q.shutWaiters
		q.shutWaiters = nil
		for _, h := range hs {
			h.settle(struct{}{}, nil)
		}
	}
	c.maybeFinish()
}

// maybeFinish closes a connection whose both directions are finished. A
// draining one that sent its FIN and is idle lingers instead until the
// peer's EOF, bounded (see drainIdle). A draining connection whose scope
// is still busy does not linger yet: the work may still be reading (a
// Pipe passing its peer's half-close on waits for the reply); it does
// once idle (scopeIdle).
func (c *Conn) maybeFinish() {
	switch {
	case c.state != connOpen || !c.wdone:
	case c.eof:
		c.closeWith(nil)
	case c.draining && !c.scope.Load().busy():
		c.linger()
	}
}

// Close closes the connection at once: queued writes that have not reached
// the kernel are dropped (their handles fail with ErrConnClosed; the writes
// of a read callback that closes are handed to the kernel first, as if
// each had been written at once), the fd is closed, handles adopted by the
// scope are cancelled, and Closed completes. It returns a handle that
// completes when all that is done: at once on the loop (Closed's own handle
// when this call closed the connection, so that the common case allocates
// nothing), after a posted job elsewhere. Idempotent: closing a connection
// that is already closed, for whatever reason, completes. Any goroutine. To
// let the queue flush first, use CloseWrite (and let the peer close).
//
// OnClose runs after Close returns, as a callback never runs inside the
// call that caused it: a program that keeps its connections in a set (to
// broadcast to them, say) and takes them out in OnClose still finds a
// closed one there meanwhile, whose Write fails with ErrConnClosed. Take
// it out where Close is called too, or skip a connection whose Closed
// handle has ended.
//
// On a TLS connection Close drops the queue just as well, and sends
// close_notify (then FIN) only when nothing was queued: the alert cannot
// follow records that were dropped, so a peer whose stream was cut sees
// it end without close_notify, not as a clean end. To end a TLS stream
// politely, CloseWrite: close_notify goes after everything written.
func (c *Conn) Close() *Handle[struct{}] {
	if c.l.OnLoop() { // the common case, without runInlineHandle's closure
		c.closeAfterWrites(nil)
		if c.closed.state.Load() == uint32(Completed) {
			return &c.closed // this Close completed it: no handle to allocate
		}
		return Pure(c.l, struct{}{})
	}
	return c.l.runInlineHandle(func() error { c.closeWith(nil); return nil })
}

// stop is the producer side of Closed: cancelling it (Loop.Stop does)
// closes the connection.
func (c *Conn) stop() { c.closeWith(ErrCancelled) }

// closeFD is Stop's last resort for an fd still registered at teardown.
func (c *Conn) closeFD() {
	c.closeWith(ErrCancelled)
	c.l.drain()
}

// closeAfterWrites closes the connection with err (as closeWith) once the
// writes the running read callback made are handed to the kernel
// (uncork): the cork only gathers them, so a close, whether the callback
// asks for it, panics, or the frame after its own fails, does not take
// them back. On the loop.
func (c *Conn) closeAfterWrites(err error) {
	c.uncork()
	c.closeWith(err)
}

// closeWith closes the connection once: the fd, the queue, the timer, the
// pending handles (failed with err, or ErrConnClosed for nil, or cancelled
// for ErrCancelled), the scope, and last Closed. On the loop.
func (c *Conn) closeWith(err error) {
	c.l.checkOnLoop()
	if c.state == connClosed {
		return
	}
	if c.tls != nil && err == nil && c.state == connOpen {
		if c.tlsClosing(); c.state == connClosed {
			return // writing close_notify failed and closed it
		}
	}
	was := c.state
	c.state = connClosed
	c.gone.Store(true)
	l := c.l
	if to := c.to; to != nil {
		l.removeTimer(&to.t)
	}
	clearFD(l, c.fd, c, c.inPoll())
	c.ev, c.quiet = 0, false
	_ = sock.Close(c.fd)
	c.fd = -1
	if was == connOpen {
		c.tl.open.Add(-1)
		c.tl.closed.Add(1)
		if c.draining {
			c.tl.draining--
		}
		if ln := c.ln; ln != nil {
			ln.conns--
			if d := ln.drained; d != nil {
				d.check()
			}
		}
		if d := c.tl.drain; d != nil {
			d.check()
		}
	}
	c.tl.queued.Add(-c.queued.Swap(0))
	c.full.Store(false) // the queue is gone: nothing to drain (no OnDrain follows)
	q := c.q
	c.q = nil
	if q != nil {
		for _, s := range q.segs[q.head:] {
			c.tl.recycle(s)
		}
	}
	c.unsplice()
	c.tl.release(l)
	c.onRead, c.onEOF, c.fr = nil, nil, nil // the framer's carry goes too

	cancelled := errors.Is(err, ErrCancelled)
	c.drainCut = err == errDrainDeadline
	werr := err
	if werr == nil {
		werr = ErrConnClosed
	}
	end := func(h *Handle[struct{}]) {
		if cancelled {
			h.cancel()
		} else {
			h.settle(struct{}{}, werr)
		}
	}
	if q != nil {
		for _, w := range q.waiters[q.waitHead:] {
			end(w.h)
		}
		for _, h := range q.shutWaiters {
			end(h)
		}
		q.waiters, q.waitHead, q.shutWaiters = nil, 0, nil
	}
	if s := c.scope.Load(); s != nil {
		s.close()
	}
	if t := c.tls; t != nil {
		t.closing()
	}
	if d := c.dial; d != nil {
		c.dial = nil
		d.c = nil
		if cancelled {
			d.cancel()
		} else {
			d.settle(nil, err)
		}
	}
	settleClosed(&c.closed, err)
	if c.onClose != nil {
		l.jobs.push(job{t: (*connCloseCall)(c)})
	}
}

// OnClose sets the callback that runs, on the loop, once the connection has
// closed, however it closed. err is nil after Close or an orderly end, the
// cause otherwise: a reset, a timeout, a panicking callback, ErrCancelled
// when Closed was cancelled, an error for which errors.Is(err,
// ErrStopped) holds (and ErrCancelled, as for everything Stop ends) when
// Loop.Stop closed it, and one that says a drain's deadline closed it
// (ErrCancelled too) for that. The last two also match ErrConnClosed and
// net.ErrClosed. It runs once, after Closed's direct continuations
// (those registered on Closed itself; what they start, and Wait or Done on
// Closed, may see the close before it), never inside this call; on a
// connection that is already closed it runs soon. Setting it again before
// it ran replaces it. Unlike Finally(c.Closed(), ...) it allocates nothing:
// for code that makes many short connections. Any goroutine; ErrNilFunc
// for nil.
func (c *Conn) OnClose(fn func(c *Conn, err error)) error {
	if fn == nil {
		return ErrNilFunc
	}
	runInlineCall(c.l, (*Conn).setOnClose, c, fn) // on the loop, no closure
	return nil
}

// setOnClose keeps fn for the close, or queues it if the connection is
// closed already. On the loop.
func (c *Conn) setOnClose(fn func(c *Conn, err error)) {
	c.l.checkOnLoop()
	// Not closed, or its call is queued and will take fn.
	if c.state != connClosed || c.onClose != nil {
		c.onClose = fn
		return
	}
	c.l.jobs.push(job{t: funcTask(func() { c.callOnClose(fn) })})
}

// connCloseCall is a Conn as the job that runs its OnClose callback: a job
// of its own type, so that queueing it allocates nothing.
type connCloseCall Conn

func (cc *connCloseCall) runTask(*Loop) {
	c := (*Conn)(cc)
	if fn := c.onClose; fn != nil {
		c.onClose = nil
		c.callOnClose(fn)
	}
}

// callOnClose runs fn with Closed's outcome. On the loop, after the close.
func (c *Conn) callOnClose(fn func(c *Conn, err error)) {
	c.l.checkOnLoop()
	_, err := c.closed.Result()
	switch {
	case err != ErrCancelled:
	case c.drainCut:
		err = errDrainDeadline // say why
	case c.l.state.Load() != stateRunning:
		err = errConnStopped
	}
	c.l.call(func() { fn(c, err) })
}
