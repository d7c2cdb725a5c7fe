package aio

import (
	"cmp"
	"errors"
	"math"
	"time"
)

// Draining ends connections gracefully, as net/http's Shutdown does: a
// connection is idle when its scope holds no running handle (the work its
// requests started, adopted into it, has finished and written its
// replies); an idle connection flushes its queue, sends FIN, reads and
// drops what the peer still sends, and closes at the peer's EOF or after
// ConnConfig.Linger, whichever comes first (nginx's lingering close). A
// busy one is left to finish first. At the deadline what is left is closed.

// errDrainDeadline closes the connections a drain's deadline found still
// open: errors.Is(err, ErrCancelled) holds (their scopes are cancelled),
// and so do ErrConnClosed and net.ErrClosed: the program's side closed it.
var errDrainDeadline error = &kindError{"aio: tcp connection closed: drain deadline passed", []error{ErrConnClosed, ErrCancelled}}

// ErrGraceExpired fails the handle of a Listener.Drain whose grace passed
// with connections still open, which it closed: the drain was not clean.
// (It does not match context.DeadlineExceeded: Wait returns that when its
// own context ends first.)
var ErrGraceExpired = errors.New("aio: drain grace expired: connections closed")

// scopeIdle runs on the loop when the last running handle left the
// connection's scope. On the loop.
func (c *Conn) scopeIdle() {
	if c.state != connOpen {
		return
	}
	if c.draining {
		c.drainIdle()
		return
	}
	if c.endAfterWork {
		c.endAfterWork = false
		c.endAfterEOF()
	}
}

// drain ends the connection once it is idle. On the loop.
func (c *Conn) drain() {
	if c.state != connOpen || c.draining {
		return
	}
	if t := c.tls; t != nil && !t.done {
		c.closeWith(nil) // mid-handshake: nothing of the program's to finish
		return
	}
	c.draining = true
	c.tl.draining++
	if !c.scope.Load().busy() {
		c.drainIdle()
	}
}

// drainIdle ends an idle draining connection as nginx's lingering close
// does: FIN after the flush, then what the peer still sends is read and
// dropped until its EOF closes the connection, or ConnConfig.Linger has
// passed (closing with unread bytes would send a reset, which can destroy
// replies the peer has not read yet: a request that crossed the FIN must
// not cost the peer its replies). On the loop.
//
// A connection its program paused (PauseRead) stays paused until the FIN
// is out: what the peer sends before it is nobody's, and a peer that
// sends on without reading the replies would otherwise be read and
// dropped at line rate for as long as WriteTimeout lets it hold the
// queue. A connection that was reading reads on (a server dropping the
// rest of an upload whose reply went out early, for a client that reads
// only once it has sent all).
func (c *Conn) drainIdle() {
	c.endAfterWork = false
	c.onEOF = nil
	c.fr = nil // frames not delivered yet are dropped, as later bytes are
	c.onRead = dropRead
	if !c.paused || c.queued.Load() == 0 && c.splicedTo() == 0 {
		c.paused = false
	}
	c.held = false
	c.update()
	c.closeWrite(nil)
	c.maybeFinish() // EOF already seen, or FIN sent: linger
}

// linger starts the bound on the wait for the peer's EOF after a
// draining connection's FIN, once: ConnConfig.Linger (DefaultLinger if
// 0). The connection's timeout timer closes it then (fire), unless its
// EOF or the drain's grace timer closes it first: a peer that never
// closes cannot hold a drain (or Runtime.Shutdown, whose drain has no
// grace timer) longer. A negative Linger closes it at once. On the loop.
func (c *Conn) linger() {
	if c.to != nil && c.to.lingerFor < 0 {
		c.closeWith(nil)
		return
	}
	if to := c.timeouts(); to.linger == 0 {
		d := cmp.Or(to.lingerFor, DefaultLinger)
		now := c.l.clock()
		to.linger = now + min(d, math.MaxInt64-now) // no overflow into "none"
		c.armTimeouts()
	}
}

// dropRead is the read callback of a connection that drains after its
// FIN: the bytes are nobody's.
func dropRead(*Conn, []byte) {}

// drainJob is one drain: Listener.Drain's of the connections a listener
// accepted, or Runtime.Shutdown's of every connection of a loop. It
// resolves the handles of the calls that asked for it once none of its
// connections is open. Owned by the loop.
type drainJob struct {
	waiters []*Promise[struct{}]
	timer   *Handle[struct{}] // the grace period's Delay; nil without one
	left    func() int        // its connections still open
	done    bool
	cut     bool // the grace closed connections: the waiters fail (ErrGraceExpired)
}

// check ends the drain once nothing is left, and completes the handles
// waiting for its end. On the loop.
func (d *drainJob) check() {
	if !d.done {
		if d.left() > 0 {
			return
		}
		d.done = true
		if d.timer != nil {
			d.timer.Cancel()
		}
	}
	for _, p := range d.waiters {
		if d.cut {
			p.Reject(ErrGraceExpired)
		} else {
			p.Resolve(struct{}{})
		}
	}
	d.waiters = nil
}

// drainHandle returns a handle that completes with the drain *job: the
// one running, or the one start starts, on the loop, if none ever was. A
// stopping loop starts none: Stop closes the connections, and refuses or
// cancels the handle. Any goroutine.
func drainHandle(l *Loop, job **drainJob, start func() *drainJob) *Handle[struct{}] {
	p := NewPromise[struct{}](l)
	l.runInline(func() {
		if l.state.Load() != stateRunning {
			return
		}
		if *job == nil {
			*job = start()
		}
		d := *job
		d.waiters = append(d.waiters, p)
		d.check()
	})
	return p.Handle()
}

// Drain stops accepting and ends the listener's connections gracefully: it
// closes the listening socket first (on the loop at once, elsewhere in a
// posted job; Closed completes then), so that new connections are refused
// or go to another listener on the port, then each connection it accepted ends
// as soon as it is idle, that is when its scope holds no running handle
// (adopt into Conn.Scope the handle that writes a reply, so that the reply
// is written first, or hold the scope with Scope.Hold): it flushes its queue, sends FIN, drops what the peer
// still sends and closes at the peer's EOF, or ConnConfig.Linger (2 s by
// default) after its FIN if the peer does not close (a lingering close:
// closing on unread bytes would reset the connection and could destroy
// replies the peer has not read yet). When grace has passed, the
// connections still open are closed (their scopes cancelled; OnClose hears
// an error that says so, for which errors.Is(err, ErrCancelled) holds).
// The handle completes when the last of them has closed, all by
// themselves; if grace closed any, it fails with ErrGraceExpired once
// they are closed. A Pipe holds both
// its connections busy until it ends, and a NetConn view its connection
// until the view's Close. A peer that keeps sending requests keeps its
// connection busy as long as each starts new work: where a request is
// read, check Conn.Draining and start none. Calling Drain again gives a
// handle that completes with the first call's. Any goroutine.
func (ln *Listener) Drain(grace time.Duration) *Handle[struct{}] {
	return drainHandle(ln.l, &ln.drained, func() *drainJob {
		ln.closeWith(nil)
		return startDrain(ln.l, grace, func() int { return ln.conns },
			func(c *Conn) bool { return c.ln == ln })
	})
}

// drainTCP ends every connection of the loop gracefully (Runtime.Shutdown):
// the listeners close, each open connection ends once idle (its FIN, then
// a lingering close bounded by ConnConfig.Linger); the handle completes
// when none of those is open. Connections opened later (a dial the
// finishing work makes) are not waited for: the work that holds one holds
// its own connection's scope, and Stop closes the rest. No deadline: Shutdown's context is it, and
// Stop what ends the rest. A second call completes with the first.
// Any goroutine.
func (l *Loop) drainTCP() *Handle[struct{}] {
	return drainHandle(l, &l.tcp.drain, func() *drainJob {
		l.eachIO(func(h ioHandler) {
			if ln, ok := h.(*Listener); ok {
				ln.closeWith(nil)
			}
		})
		return startDrain(l, -1, func() int { return l.tcp.draining },
			func(*Conn) bool { return true })
	})
}

// startDrain drains the loop's open connections that mine selects, closing
// those left after grace (none with grace < 0), and returns the job that
// closeWith checks as they close. On the loop.
func startDrain(l *Loop, grace time.Duration, left func() int, mine func(*Conn) bool) *drainJob {
	each := func(fn func(c *Conn)) {
		l.eachIO(func(h ioHandler) {
			if c, ok := h.(*Conn); ok && c.state == connOpen && mine(c) {
				fn(c)
			}
		})
	}
	d := &drainJob{left: left}
	if grace >= 0 {
		d.timer = Delay(l, grace, func() (struct{}, error) {
			each(func(c *Conn) {
				d.cut = true // before the close, whose check may end the drain
				c.closeWith(errDrainDeadline)
			})
			return struct{}{}, nil
		})
	}
	each((*Conn).drain)
	return d
}
