package aio

import (
	"fmt"
	"math"
	"net/netip"
	"sync/atomic"

	"github.com/valkyria/aio/internal/poll"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// A Conn's code is split by concern, as libuv's stream.c: this file has the
// type, its setup and accessors, the interest it registers with the poller
// and the dispatch of readiness (onIO); tcp_read.go the read path,
// tcp_write.go the write queue, tcp_close.go half-close and close,
// tcp_options.go socket options and timeouts, tcp_dial.go connecting.
//
// Lifecycle: a Conn is born connecting (Dial) or open (accepted). Open, it
// reads while OnRead is set and nothing holds reading back (PauseRead, a
// full write queue unless ReadWhileFull, EOF), and writes straight to the kernel, queueing what
// the kernel does not take. It ends in closeWith, the one transition to
// closed, on every path (Close, an error, a timeout, both directions
// finished, Loop.Stop): the fd is closed there and Closed settles.

// Connection states. Owned by the loop.
const (
	connConnecting uint8 = iota // Dial in progress
	connOpen
	connClosed
)

// A Conn is a TCP connection owned by a loop: accepted by a Listener or
// established by Dial. It has no goroutine. Bytes arrive through the OnRead
// callback, on the loop, in the loop's shared read buffer; writes are copied
// into a queue that the loop flushes with writev as the kernel takes them.
//
// A connection is a scope (see Scope): handles adopted into it are cancelled
// when it closes, so the work a client started ends when the client goes.
//
// Every method but Draining (for the loop) may be called from any goroutine.
// On the loop they act at once; elsewhere the work is posted to the loop (in
// the caller's order) and what completes later is a handle. Every callback
// runs on the loop, never inside the call that registers it.
type Conn struct {
	// closed is Closed(): a producer of the loop; cancelling it closes the
	// connection, and Stop does so through the fd table (see newConn).
	closed Handle[struct{}]

	l  *Loop    // immutable
	tl *tcpLoop // immutable
	// The addresses are set before the connection is handed out (to the
	// accept callback, or by Dial's handle) and never change.
	laddr, raddr netip.AddrPort
	// The water marks; immutable. int32: 8 bytes less keep the size class
	// (see below) with the tls pointer.
	hw, lw int32

	gone   atomic.Bool           // closed; written on the loop, read anywhere
	wshut  atomic.Bool           // CloseWrite was called; written on the loop, read anywhere
	queued atomic.Int64          // bytes in the write queue; written on the loop, read anywhere
	full   atomic.Bool           // the queue went above hw and has not come down to lw; written on the loop
	scope  atomic.Pointer[Scope] // made on first use, by any goroutine

	// Owned by the loop. (The small fields follow ev, with no padding
	// between them: see the size below.)
	fd    int         // -1 once closed
	ev    poll.Events // interest registered with the poller; 0: not registered
	state uint8       // connConnecting, connOpen, connClosed
	// noDelayDue says TCP_NODELAY is still to be set, before the second
	// write system call (see noDelayAfterFirst).
	noDelayDue uint8
	syncing    bool // an interest update is queued as a job
	paused     bool // PauseRead
	// quiet: the fd is in the poller with no interest, so that a reset
	// still reaches a connection that is not reading (see syncInterest).
	// The fd is in the poller iff ev != 0 || quiet.
	quiet bool
	held  bool // reading is held back by a full queue (not ReadWhileFull)
	// readWhileFull is ConnConfig.ReadWhileFull: a full queue does not hold
	// reading back.
	readWhileFull bool
	eof           bool // the peer's FIN was read
	// endAfterWork: EOF came without OnEOF while the scope was busy; the
	// connection half-closes once the scope is idle (see gotEOF).
	endAfterWork bool
	draining     bool  // ending once idle (see drain)
	wdone        bool  // shutdown(SHUT_WR) done
	cork         uint8 // writes made during a read callback (corkNone...; see write)
	drainCut     bool  // a drain's deadline closed it: OnClose says so (errDrainDeadline)
	onRead       func(c *Conn, b []byte)
	onEOF        func(c *Conn)
	onClose      func(c *Conn, err error)

	// What most connections never need is allocated on first use: a
	// connection whose writes the kernel takes at once and that has no
	// timeout is 320 bytes on 64-bit systems, a size class of its own
	// (idle memory per connection, and the bytes a connect-and-close
	// workload touches; TestConnSize keeps it there).
	q  *writeQueue   // the write queue, from the first write not taken at once (or OnDrain)
	to *connTimeouts // the timeouts, from the first one set
	fr *framer       // OnFrame's state and the bytes it holds (tcp_frame.go), from OnFrame

	dial *dialNode // the Dial handle, while connecting
	ln   *Listener // the listener that accepted it, nil if dialed; immutable
	pipe *pipeNode // the Pipe it belongs to, from the pipe's start
	tls  *tlsConn  // TLS state (tls.go), set before the program sees the connection
}

// newConn makes the Conn that owns fd and routes fd's readiness to it. The
// caller sets the addresses and the counters. On the loop, while it runs
// (Dial's connect checks; accepting happens only in the poll phase).
//
// Closed is deliberately not adopted for lazy tracking as other producers are
// (adoptProducer), so Stop's cancelling passes do not see it: the fd table
// holds the Conn strongly while it is open, so it can never be abandoned, and
// Stop closes whatever the table still holds after those passes (closeFDs),
// cancelling Closed. A tracking record would cost three allocations and a
// weak pointer for every connection that lives past two loop iterations.
func newConn(l *Loop, tl *tcpLoop, fd int, cfg ConnConfig, state uint8) *Conn {
	c := new(Conn)
	c.init(l, tl, fd, cfg, state)
	return c
}

// init sets up a zero Conn as newConn does, for a Conn allocated with
// something else (Dial's handle).
func (c *Conn) init(l *Loop, tl *tcpLoop, fd int, cfg ConnConfig, state uint8) {
	c.l, c.tl, c.fd, c.state = l, tl, fd, state
	c.hw, c.lw = int32(min(cfg.HighWater, math.MaxInt32)), int32(min(cfg.LowWater, math.MaxInt32))
	c.readWhileFull = cfg.ReadWhileFull
	if cfg.ReadTimeout|cfg.IdleTimeout|cfg.WriteTimeout|cfg.Linger != 0 {
		to := c.timeouts()
		to.read, to.idle, to.write = cfg.ReadTimeout, cfg.IdleTimeout, cfg.WriteTimeout
		to.lingerFor = cfg.Linger
	}
	c.closed.init(l)
	c.closed.state.Store(uint32(Running))
	c.closed.prod = c
	tl.acquire()
	setFD(l, fd, c)
}

// Loop returns the connection's loop.
func (c *Conn) Loop() *Loop { return c.l }

// LocalAddr returns the connection's local address. Any goroutine.
func (c *Conn) LocalAddr() netip.AddrPort { return c.laddr }

// RemoteAddr returns the peer's address. Any goroutine.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.raddr }

// Buffered returns the bytes written (Write) that have not reached the
// kernel yet. Any goroutine.
func (c *Conn) Buffered() int { return int(c.queued.Load()) }

// Full reports whether the write queue went above the high-water mark and
// has not come down to the low-water mark since: OnDrain will run when it
// has. A program that writes what it reads from elsewhere pauses that
// source while Full and resumes it in OnDrain. One that writes the same
// bytes to many connections (a broadcast) has no source to pause for one
// of them: it skips or closes a connection that is Full (and sets
// ConnConfig.WriteBuffer small, so that a laggard is Full early), or
// WriteTimeout closes one that stopped reading. A closed connection is not
// Full: its queue was dropped (no OnDrain runs then). Any goroutine.
func (c *Conn) Full() bool { return c.full.Load() }

// Draining reports whether the connection is ending gracefully (Drain,
// Listener.Drain, Runtime.Shutdown): it closes as soon as its scope is
// idle. A request/response server checks it where it reads a request and
// starts no work for one that arrives now (it ignores it, or answers that
// it is going away), as net/http's Shutdown finishes a connection's request
// in progress and reads no next one: otherwise a peer that keeps sending
// keeps its connection busy, and the drain waits for its deadline. Once the
// connection is idle, what the peer still sends is dropped without reaching
// OnRead. On the loop.
func (c *Conn) Draining() bool {
	c.l.checkOnLoop()
	return c.draining
}

// Closed returns a handle that ends when the connection is gone and its fd
// closed: completed after Close or an orderly end (both sides finished),
// failed with the cause when an error closed it (a reset, a timeout, a
// panicking callback), cancelled by Loop.Stop. Cancelling it closes the
// connection. Any goroutine. (OnClose is the same news as a callback, without
// an allocation per connection.)
func (c *Conn) Closed() *Handle[struct{}] { return &c.closed }

// Scope returns the connection's scope: handles adopted into it (Adopt) are
// cancelled when the connection closes, and a handle adopted after that is
// cancelled at once. Any goroutine.
func (c *Conn) Scope() *Scope {
	if s := c.scope.Load(); s != nil {
		return s
	}
	s := newScope(c.l)
	s.onIdle = c.scopeIdle
	s.held = true // the connection's close closes it
	if !c.scope.CompareAndSwap(nil, s) {
		return c.scope.Load()
	}
	if c.gone.Load() { // closed meanwhile, maybe before seeing s
		c.l.runLater(s.close)
	}
	return s
}

// runInlineIfOpen is Loop.runInline for a connection's setting: fn runs on
// the loop if the connection is still open there, now when called on the
// loop, else posted. It returns ErrConnClosed if the connection is already
// known to be closed.
func (c *Conn) runInlineIfOpen(fn func()) error {
	if c.l.OnLoop() {
		if c.state == connClosed {
			return ErrConnClosed
		}
		fn()
		return nil
	}
	if c.gone.Load() {
		return ErrConnClosed
	}
	c.l.runLater(func() {
		if c.state != connClosed {
			fn()
		}
	})
	return nil
}

// guard is deferred around user callbacks: a panic is reported like one in a
// posted callback and closes the connection with a *PanicError.
func (c *Conn) guard() {
	if p := recover(); p != nil {
		c.l.reportPanic(p)
		c.closeAfterWrites(newPanicError(p)) // what it wrote before it panicked goes first
	}
}

func (c *Conn) callback(fn func(*Conn)) {
	defer c.guard()
	fn(c)
}

// connSync is Conn as a loop job: its runTask applies the interest the
// connection wants. A job{t: ...} of it costs no allocation.
type connSync Conn

func (s *connSync) runTask(*Loop) { (*Conn)(s).syncInterest() }

// update queues one interest update for after the current callback, so that
// the changes a callback makes (OnRead, a write that queued, a pause) cost at
// most one epoll_ctl. On the loop.
func (c *Conn) update() {
	c.l.checkOnLoop()
	if !c.syncing {
		c.syncing = true
		c.l.jobs.push(job{t: (*connSync)(c)})
	}
}

// syncInterest tells the poller what the connection wants.
//
// An fd that wants nothing stays in the poller with no interest (a MOD, not
// a DEL: the same one epoll_ctl): epoll reports EPOLLERR and EPOLLHUP
// whatever the interest, and a connection that is not reading (PauseRead, a
// full write queue, a Pipe's backpressure, EOF with its replies still
// running) must still learn that the peer reset it, so that it closes and
// cancels what its requests started instead of running it to its end (see
// hangupQuiet). libuv takes such an fd out of epoll, and so did this code:
// a reset then went unnoticed until a write failed. An fd not yet in the
// poller (an accepted connection before OnRead) is not added for this.
//
// kqueue has no such report: with neither filter registered the kernel
// tells nothing about the fd (internal/poll's Add), so on darwin and the
// BSDs a connection that neither reads nor writes still learns of a reset
// only at its next read or write. (EVFILT_READ with a NOTE_LOWAT above the
// receive buffer might report EV_EOF alone; it is untried, so not used.)
func (c *Conn) syncInterest() {
	c.syncing = false
	if c.state != connOpen {
		return
	}
	var want poll.Events
	if c.reading() {
		want |= poll.Readable
		if to := c.to; to != nil && c.ev&poll.Readable == 0 && to.read > 0 {
			to.lastRead = c.l.clock() // the read timeout counts from here
		}
	}
	if c.queued.Load() > 0 || c.splicedTo() > 0 {
		want |= poll.Writable
		if to := c.to; to != nil && c.ev&poll.Writable == 0 && to.write > 0 {
			c.writeStalled(to, c.l.clock()) // the write timeout counts from here
		}
	}
	if want != c.ev {
		var err error
		if c.inPoll() {
			err = c.l.poller.Modify(c.fd, want) // want 0 keeps Error and Hangup
		} else {
			err = c.l.poller.Add(c.fd, want) // want != 0 here
		}
		if err != nil {
			// c.ev and c.quiet still say whether the fd is in the
			// poller (a failed Add leaves nothing; a failed Modify
			// leaves it registered), so that closeWith's clearFD
			// deletes it. epoll forgets an fd at its close, but the
			// kqueue Poller's record of it would stay, and every later
			// Add of the same fd number would fail with EEXIST.
			c.closeWith(c.ioError("poll", err))
			return
		}
		c.quiet = want == 0
	}
	c.ev = want
	c.armTimeouts()
	if c.fr != nil && c.fr.held {
		c.resumeFrames() // reading may go on: deliver what the framer held back
	}
	if t := c.tls; t != nil && t.parked {
		t.resume() // likewise what crypto/tls holds
	}
}

// inPoll reports whether the fd is registered with the poller. On the loop.
func (c *Conn) inPoll() bool { return c.ev != 0 || c.quiet }

func (c *Conn) ioError(op string, err error) error {
	return fmt.Errorf("aio: tcp %s %s: %w", op, c.raddr, err)
}

// onIO handles readiness. On the loop.
func (c *Conn) onIO(ev poll.Events) {
	c.l.checkOnLoop()
	switch c.state {
	case connConnecting:
		c.finishConnect()
		return
	case connClosed:
		return
	}
	if ev&(poll.Writable|poll.Error|poll.Hangup) != 0 && (c.queued.Load() > 0 || c.pipe != nil) {
		c.onWritable()
	}
	if ev&(poll.Readable|poll.Error|poll.Hangup) == 0 || c.state != connOpen {
		return
	}
	if c.reading() {
		if p := c.pipe; p != nil {
			if d := p.from(c); d.splices() {
				d.pull()
				return
			}
		}
		c.readSome()
		return
	}
	if ev&(poll.Error|poll.Hangup) != 0 {
		c.hangupQuiet(ev)
	}
}

// hangupQuiet handles Error or Hangup for an open connection that is not
// reading, which syncInterest keeps in the poller for that. On the loop.
//
//   - An error (a reset: EPOLLERR, SO_ERROR ECONNRESET) closes the
//     connection with it at once, which fails Closed and cancels its scope:
//     the peer is gone, and so is whatever its requests started.
//   - A hang-up without an error means both directions are shut (the
//     peer's FIN arrived and ours was sent, or the socket closed cleanly):
//     data the program has not read may still wait in the socket, and
//     closing would lose it, but the event is level-triggered and would
//     come back on every Wait. So the fd leaves the poller, as it did
//     before quiet registration; the next interest (ResumeRead, a write
//     that queues) adds it again, and reading drains the data, then EOF.
//     An error without an errno (SO_ERROR already read) is the same.
//
// A connection that still wants to write leaves it to the write path
// (onWritable), which sees the same event and fails the write.
func (c *Conn) hangupQuiet(ev poll.Events) {
	if ev&poll.Error != 0 {
		// Only SO_ERROR tells what happened (and clears it).
		if e, err := sock.SocketError(c.fd); err == nil && e != 0 {
			c.closeWith(c.ioError("read", unix.Errno(e)))
			return
		}
	}
	if c.ev != 0 || !c.quiet {
		return // wanting to write, or an interest update is due (update)
	}
	c.quiet = false
	if err := c.l.poller.Delete(c.fd); err != nil {
		c.closeWith(c.ioError("poll", err))
	}
}

func (c *Conn) base() *core { return &c.closed.core }
