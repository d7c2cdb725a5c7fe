package aio

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio/internal/poll"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// Connection states. Owned by the loop.
const (
	connConnecting uint8 = iota // Dial in progress
	connOpen
	connClosed
)

// maxReadsPerEvent bounds the reads of one connection per readiness event, so
// that a fast sender cannot keep the loop on one socket.
const maxReadsPerEvent = 16

// A Conn is a TCP connection owned by a loop: accepted by a Listener or
// established by Dial. It has no goroutine. Bytes arrive through the OnRead
// callback, on the loop, in the loop's shared read buffer; writes are copied
// into a queue that the loop flushes with writev as the kernel takes them.
//
// A connection is a scope (see Scope): handles adopted into it are cancelled
// when it closes, so the work a client started ends when the client goes.
//
// Every method may be called from any goroutine. On the loop they act at
// once; elsewhere the work is posted to the loop (in the caller's order) and
// what completes later is a handle. Every callback runs on the loop, never
// inside the call that registers it.
type Conn struct {
	// closed is Closed(): a producer of the loop; cancelling it closes the
	// connection, and Stop does so through the fd table (see newConn).
	closed Handle[struct{}]

	l  *Loop    // immutable
	tl *tcpLoop // immutable
	// The addresses are set before the connection is handed out (to the
	// accept callback, or by Dial's handle) and never change.
	laddr, raddr netip.AddrPort
	hw, lw       int // water marks; immutable

	gone   atomic.Bool           // closed; written on the loop, read anywhere
	wshut  atomic.Bool           // CloseWrite was called; written on the loop, read anywhere
	queued atomic.Int64          // bytes in the write queue; written on the loop, read anywhere
	scope  atomic.Pointer[Scope] // made on first use, by any goroutine

	// Owned by the loop.
	fd      int         // -1 once closed
	state   uint8       // connConnecting, connOpen, connClosed
	ev      poll.Events // interest registered with the poller; 0: not registered
	syncing bool        // an interest update is queued as a job
	paused  bool        // PauseRead
	full    bool        // the queue went above hw and has not come down to lw: not reading
	eof     bool        // the peer's FIN was read
	wdone   bool        // shutdown(SHUT_WR) done
	// noDelayDue says TCP_NODELAY is still to be set, before the second
	// write system call (see noDelayAfterFirst).
	noDelayDue uint8
	onRead     func(c *Conn, b []byte)
	onEOF      func(c *Conn)
	onClose    func(c *Conn, err error)

	// What most connections never need is allocated on first use: a
	// connection whose writes the kernel takes at once and that has no
	// timeout is 288 bytes (idle memory per connection, and the bytes a
	// connect-and-close workload touches).
	q  *writeQueue   // the write queue, from the first write not taken at once (or OnDrain)
	to *connTimeouts // the timeouts, from the first one set

	dial *dialNode // the Dial handle, while connecting
}

// writeQueue is a connection's write queue: segments wq[wh:], the first from
// offset woff. Small writes are copied into chunks of chunkSize, larger ones
// into a segment of their own. Positions count the bytes of the stream since
// the queue was made: total were accepted by Write/Send, written reached the
// kernel. Owned by the loop.
type writeQueue struct {
	wq      [][]byte
	wh      int
	woff    int
	total   uint64
	written uint64
	waiters []writeWaiter       // Write handles by end position, oldest first, from ww
	ww      int                 //
	shutHs  []*Handle[struct{}] // CloseWrite handles waiting for the queue to flush
	onDrain func(c *Conn)       // OnDrain, kept here with what it is about
}

// queue returns c's write queue, making it on first use. On the loop.
func (c *Conn) queue() *writeQueue {
	if c.q == nil {
		c.q = &writeQueue{}
	}
	return c.q
}

// connTimeouts are a connection's read and idle timeouts: one timer, armed
// for the earliest deadline. Activity only moves lastRead/lastIO; a timer
// that fires early re-arms itself, so a busy connection costs no timer-heap
// work per read. Owned by the loop.
type connTimeouts struct {
	t          timer
	read, idle time.Duration
	lastRead   time.Duration // loop clock of the last read, or of reading (re)starting
	lastIO     time.Duration // loop clock of the last byte read or written
}

// timeouts returns c's timeouts, making them on first use. On the loop (or
// before c is shared).
func (c *Conn) timeouts() *connTimeouts {
	if c.to == nil {
		c.to = &connTimeouts{}
		c.to.t.owner = c
		c.to.t.index = -1
	}
	return c.to
}

// writeWaiter is a Write handle waiting for the stream to reach end.
type writeWaiter struct {
	end uint64
	h   *Handle[struct{}]
}

// newConn makes the Conn that owns fd and routes fd's readiness to it. The
// caller sets the addresses and the counters. On the loop, while it runs
// (Dial's connect checks; accepting happens only in the poll phase).
//
// Closed is not adopted for lazy tracking as other producers are
// (adoptProducer): the fd table holds the Conn strongly while it is open, so
// it can never be abandoned, and Stop closes whatever the table still holds
// (closeFDs). A tracking record would cost three allocations and a weak
// pointer for every connection that lives past two loop iterations.
func newConn(l *Loop, tl *tcpLoop, fd int, cfg ConnConfig, state uint8) *Conn {
	c := new(Conn)
	c.init(l, tl, fd, cfg, state)
	return c
}

// init sets up a zero Conn as newConn does, for a Conn allocated with
// something else (Dial's handle).
func (c *Conn) init(l *Loop, tl *tcpLoop, fd int, cfg ConnConfig, state uint8) {
	c.l, c.tl, c.fd, c.state = l, tl, fd, state
	c.hw, c.lw = cfg.HighWater, cfg.LowWater
	if cfg.ReadTimeout|cfg.IdleTimeout != 0 {
		to := c.timeouts()
		to.read, to.idle = cfg.ReadTimeout, cfg.IdleTimeout
	}
	c.closed.init(l)
	c.closed.state.Store(uint32(Running))
	c.closed.prod = c
	tl.acquire()
	setFD(l, fd, c)
}

// setConnOptions applies cfg's socket options to fd; TCP_NODELAY only if
// the socket does not have it already (inherited from its listener) or gets
// it later (see noDelayAfterFirst).
func setConnOptions(fd int, cfg ConnConfig, skipNoDelay bool) error {
	if !cfg.Nagle && !skipNoDelay {
		if err := sock.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
		}
	}
	if cfg.KeepAlive > 0 {
		if err := sock.SetKeepAlive(fd, cfg.KeepAlive); err != nil {
			return err
		}
	}
	return nil
}

// Values of Conn.noDelayDue. A dialed connection whose first write system
// call is small (up to noDelayLateMax bytes) gets TCP_NODELAY just before its
// second write system call rather than before connecting: Nagle's algorithm
// holds a small segment back only while earlier data is unacknowledged, and
// a first write of one segment on a fresh connection never finds any, so it
// goes out at once either way, on every TCP stack (classic Nagle as on the
// BSDs or gVisor's netstack, or Linux's Minshall variant). A larger first
// write could leave a small tail behind its earlier segments, so the option
// is set before it. A connection that writes once (a request, a reply)
// saves a system call.
const (
	noDelayNone       = iota // nothing to do: set, inherited, or Nagle wanted
	noDelayAfterFirst        // no write yet
	noDelayNow               // one write made: set it before the next
)

// noDelayLateMax is the largest first write that leaves TCP_NODELAY for
// later: one segment under the smallest MSS (536 bytes for IPv4).
const noDelayLateMax = 512

// beforeWrite runs before every write system call on c, of n bytes. On the
// loop.
func (c *Conn) beforeWrite(n int) {
	switch c.noDelayDue {
	case noDelayAfterFirst:
		if n <= noDelayLateMax {
			c.noDelayDue = noDelayNow
			return
		}
		fallthrough
	case noDelayNow:
		c.noDelayDue = noDelayNone
		// An error here (the connection failed) is the write's to report.
		_ = sock.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
}

// ---- accessors ----

// Loop returns the connection's loop.
func (c *Conn) Loop() *Loop { return c.l }

// LocalAddr returns the connection's local address. Any goroutine.
func (c *Conn) LocalAddr() netip.AddrPort { return c.laddr }

// RemoteAddr returns the peer's address. Any goroutine.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.raddr }

// Buffered returns the bytes written (Write, Send) that have not reached the
// kernel yet. Any goroutine.
func (c *Conn) Buffered() int { return int(c.queued.Load()) }

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
	if !c.scope.CompareAndSwap(nil, s) {
		return c.scope.Load()
	}
	if c.gone.Load() { // closed meanwhile, maybe before seeing s
		c.l.exec(s.close)
	}
	return s
}

// ---- callbacks ----

// onLoopDo runs fn on the loop if the connection is open there: at once on
// the loop, else posted. It returns ErrConnClosed if the connection is
// already known to be closed.
func (c *Conn) onLoopDo(fn func()) error {
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
	c.l.exec(func() {
		if c.state != connClosed {
			fn()
		}
	})
	return nil
}

// OnRead sets the read callback and starts reading. fn runs on the loop with
// the bytes that arrived; b is the loop's shared read buffer (ReadBufferSize
// bytes, used by every connection of the loop) and is valid only until fn
// returns: copy what you keep. Passing b to Write or Send is fine (they copy
// what the kernel does not take at once). A panic in fn closes the
// connection with a *PanicError. Any goroutine; ErrNilFunc for nil,
// ErrConnClosed after the connection closed.
func (c *Conn) OnRead(fn func(c *Conn, b []byte)) error {
	if fn == nil {
		return ErrNilFunc
	}
	if c.l.OnLoop() { // the common case (an accept callback) without a closure
		if c.state == connClosed {
			return ErrConnClosed
		}
		c.onRead = fn
		c.update()
		return nil
	}
	return c.onLoopDo(func() { c.onRead = fn; c.update() })
}

// OnEOF sets the callback that runs, on the loop, when the peer has finished
// sending (its FIN arrived after the last byte). The connection stays open
// for writing: fn may write a reply, then CloseWrite or Close. Once both
// directions are finished (EOF seen and CloseWrite flushed) the connection
// closes by itself. Without OnEOF, EOF closes the connection once the write
// queue is flushed. Any goroutine; ErrNilFunc for nil.
func (c *Conn) OnEOF(fn func(c *Conn)) error {
	if fn == nil {
		return ErrNilFunc
	}
	return c.onLoopDo(func() { c.onEOF = fn })
}

// OnDrain sets the callback that runs, on the loop, when the write queue,
// after growing above the high-water mark (which paused reading), has come
// down to the low-water mark (and reading resumed). Any goroutine;
// ErrNilFunc for nil.
func (c *Conn) OnDrain(fn func(c *Conn)) error {
	if fn == nil {
		return ErrNilFunc
	}
	return c.onLoopDo(func() { c.queue().onDrain = fn })
}

// PauseRead stops reading until ResumeRead: the kernel's receive buffer fills
// and TCP flow control slows the peer down. Any goroutine.
func (c *Conn) PauseRead() error { return c.onLoopDo(func() { c.paused = true; c.update() }) }

// ResumeRead undoes PauseRead. Any goroutine.
func (c *Conn) ResumeRead() error { return c.onLoopDo(func() { c.paused = false; c.update() }) }

// guard is deferred around user callbacks: a panic is reported like one in a
// posted callback and closes the connection with a *PanicError.
func (c *Conn) guard() {
	if p := recover(); p != nil {
		c.l.reportPanic(p)
		c.closeWith(newPanicError(p))
	}
}

func (c *Conn) callRead(b []byte) {
	defer c.guard()
	c.onRead(c, b)
}

func (c *Conn) callback(fn func(*Conn)) {
	defer c.guard()
	fn(c)
}

// ---- interest ----

// reading reports whether the connection wants to read. On the loop.
func (c *Conn) reading() bool {
	return c.state == connOpen && c.onRead != nil && !c.paused && !c.full && !c.eof
}

// connSync is Conn as a loop job: its inputDone applies the interest the
// connection wants. A job{d: ...} of it costs no allocation.
type connSync Conn

func (s *connSync) inputDone() { (*Conn)(s).syncInterest() }

// update queues one interest update for after the current callback, so that
// the changes a callback makes (OnRead, a write that queued, a pause) cost at
// most one epoll_ctl. On the loop.
func (c *Conn) update() {
	if !c.syncing {
		c.syncing = true
		c.l.jobs.push(job{d: (*connSync)(c)})
	}
}

// syncInterest tells the poller what the connection wants. An fd that wants
// nothing is taken out of the poller, as libuv does: epoll reports hang-ups
// even without interest, and an fd nobody reads would report them forever.
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
	if c.queued.Load() > 0 {
		want |= poll.Writable
	}
	var err error
	switch {
	case want == c.ev:
	case want == 0:
		err = c.l.poller.Delete(c.fd)
	case c.ev == 0:
		err = c.l.poller.Add(c.fd, want)
	default:
		err = c.l.poller.Modify(c.fd, want)
	}
	if err != nil {
		c.ev = 0 // whatever the poller holds goes with the fd's close
		c.closeWith(c.ioError("poll", err))
		return
	}
	c.ev = want
	c.armTimeouts()
}

func (c *Conn) ioError(op string, err error) error {
	return fmt.Errorf("aio: tcp %s %s: %w", op, c.raddr, err)
}

// ---- I/O ----

// onIO handles readiness. On the loop.
func (c *Conn) onIO(ev poll.Events) {
	switch c.state {
	case connConnecting:
		c.finishConnect()
		return
	case connClosed:
		return
	}
	if ev&(poll.Writable|poll.Error|poll.Hangup) != 0 && c.queued.Load() > 0 {
		c.flush()
	}
	if ev&(poll.Readable|poll.Error|poll.Hangup) == 0 || c.state != connOpen {
		return
	}
	if c.reading() {
		c.readSome()
		return
	}
	if ev&poll.Error != 0 {
		// Not reading, nothing to write: only SO_ERROR tells what happened.
		if e, err := sock.SocketError(c.fd); err == nil && e != 0 {
			c.closeWith(c.ioError("read", unix.Errno(e)))
		}
	}
}

// readSome reads until the socket is drained, the connection stops reading,
// or maxReadsPerEvent reads were made.
func (c *Conn) readSome() {
	buf := *c.tl.buf
	for i := 0; i < maxReadsPerEvent; i++ {
		n, err := sock.Read(c.fd, buf)
		switch {
		case err == nil && n > 0:
			c.tl.bytesIn.Add(uint64(n))
			if to := c.to; to != nil {
				now := c.l.clock()
				to.lastRead, to.lastIO = now, now
			}
			c.callRead(buf[:n])
			if n < len(buf) || !c.reading() {
				return
			}
		case err == nil:
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

// gotEOF handles the peer's FIN.
func (c *Conn) gotEOF() {
	c.eof = true
	if c.onEOF == nil && c.queued.Load() == 0 {
		c.closeWith(nil) // no interest update to queue for a closed fd
		return
	}
	c.update() // reading stops
	if c.onEOF != nil {
		c.callback(c.onEOF)
		c.maybeFinish()
		return
	}
	c.closeWrite(nil)
}

// maybeFinish closes a connection whose both directions are finished.
func (c *Conn) maybeFinish() {
	if c.state == connOpen && c.eof && c.wdone {
		c.closeWith(nil)
	}
}

// Write queues a copy of b for sending and returns a handle that completes
// once all of b has reached the kernel (written to the socket; not
// acknowledged by the peer). b may be reused as soon as Write returns. On the
// loop the bytes are written at once if the queue is empty, and only the
// rest is copied and queued; elsewhere b is copied and the write posted. The
// handle fails with ErrConnClosed, ErrWriteClosed or the socket's error if
// the bytes cannot be sent; cancelling it does not take them back (Close
// does). Writing past the high-water mark is allowed, but the connection
// stops reading until the queue drains (see OnDrain). Any goroutine.
func (c *Conn) Write(b []byte) *Handle[struct{}] {
	l := c.l
	if l.OnLoop() {
		queued, err := c.write(b, false)
		switch {
		case err != nil:
			return Fail[struct{}](l, err)
		case !queued:
			return Pure(l, struct{}{})
		}
		h := runningHandle(c.l)
		c.addWaiter(h)
		return h
	}
	if err := c.writeCheck(); err != nil {
		return Fail[struct{}](l, err)
	}
	own := append([]byte(nil), b...)
	h := runningHandle(c.l)
	l.exec(func() {
		queued, err := c.write(own, true)
		switch {
		case err != nil:
			h.settle(struct{}{}, err)
		case !queued:
			h.settle(struct{}{}, nil)
		default:
			c.addWaiter(h)
		}
	})
	return h
}

// Send is Write without a handle, for code that does not need to know when
// the bytes reach the kernel: it copies what it queues just the same, and
// allocates nothing when the kernel takes b at once. It returns
// ErrConnClosed or ErrWriteClosed when the write is refused up front; an
// error that happens later closes the connection (see Closed). Any
// goroutine.
func (c *Conn) Send(b []byte) error {
	if c.l.OnLoop() {
		_, err := c.write(b, false)
		return err
	}
	if err := c.writeCheck(); err != nil {
		return err
	}
	own := append([]byte(nil), b...)
	c.l.exec(func() { _, _ = c.write(own, true) })
	return nil
}

// writeCheck is the up-front check of a write made off the loop.
func (c *Conn) writeCheck() error {
	switch {
	case c.gone.Load():
		return ErrConnClosed
	case c.wshut.Load():
		return ErrWriteClosed
	}
	return nil
}

// write sends b, queueing what the kernel does not take; owned says b is the
// connection's to keep. It reports whether anything was queued. On the loop.
func (c *Conn) write(b []byte, owned bool) (queued bool, err error) {
	switch {
	case c.state != connOpen:
		return false, ErrConnClosed
	case c.wshut.Load():
		return false, ErrWriteClosed
	case len(b) == 0:
		return false, nil
	}
	if q := c.q; q != nil {
		q.total += uint64(len(b))
	}
	if c.queued.Load() == 0 {
		c.beforeWrite(len(b))
		n, err := sock.Write(c.fd, b)
		if err != nil {
			if !errnoIs(err, unix.EAGAIN) && !errnoIs(err, unix.EINTR) {
				err = c.ioError("write", err)
				c.closeWith(err)
				return false, err
			}
			n = 0
		}
		if n > 0 {
			c.wrote(n)
		}
		if n == len(b) {
			return false, nil
		}
		b = b[n:]
	}
	c.enqueue(b, owned)
	return true, nil
}

// wrote accounts for n bytes that reached the kernel.
func (c *Conn) wrote(n int) {
	if q := c.q; q != nil {
		q.written += uint64(n)
	}
	c.tl.bytesOut.Add(uint64(n))
	if to := c.to; to != nil && to.idle != 0 {
		to.lastIO = c.l.clock()
	}
}

// addWaiter queues h to complete when the bytes written so far have reached
// the kernel. On the loop.
func (c *Conn) addWaiter(h *Handle[struct{}]) {
	q := c.q // write queued something: q exists
	q.waiters, q.ww = compactFront(q.waiters, q.ww)
	q.waiters = append(q.waiters, writeWaiter{end: q.total, h: h})
}

// compactFront drops a queue's consumed prefix s[:head] once it is at least
// half of s, so that a queue that never quite empties (a stream to a reader a
// little slower than the writer) does not grow with everything that ever
// passed through it.
func compactFront[E any](s []E, head int) ([]E, int) {
	if head == 0 || head < len(s)/2 {
		return s, head
	}
	n := copy(s, s[head:])
	clear(s[n:])
	return s[:n], 0
}

// enqueue appends b to the write queue, copying it unless owned.
func (c *Conn) enqueue(b []byte, owned bool) {
	n := len(b)
	q := c.q
	if q == nil {
		q = c.queue()
		q.total = uint64(n) // the positions start with these bytes
	}
	q.wq, q.wh = compactFront(q.wq, q.wh)
	if k := len(q.wq); k > q.wh && !owned {
		last := q.wq[k-1]
		if cap(last) == chunkSize && len(last) < chunkSize {
			m := copy(last[len(last):chunkSize], b)
			q.wq[k-1] = last[:len(last)+m]
			b = b[m:]
		}
	}
	for len(b) > 0 {
		var seg []byte
		switch {
		case owned:
			seg = b
		case len(b) < chunkSize:
			seg = c.tl.chunk()
			seg = seg[:copy(seg[:chunkSize], b)]
		default:
			seg = append([]byte(nil), b...)
		}
		q.wq = append(q.wq, seg)
		b = b[len(seg):]
	}
	if c.queued.Add(int64(n)) == int64(n) {
		c.update() // the queue was empty: ask for Writable
	}
	c.tl.queued.Add(int64(n))
	if !c.full && int(c.queued.Load()) > c.hw {
		c.full = true // stop reading until the queue drains
		c.update()
	}
}

// flush writes the queue until it is empty or the kernel is full. On the
// loop.
func (c *Conn) flush() {
	q := c.q // bytes are queued: q exists
	for c.queued.Load() > 0 {
		segs := q.wq[q.wh:]
		off := q.offered()
		var n int
		var err error
		c.beforeWrite(noDelayLateMax + 1) // a write was made before: the queue is its rest
		if len(segs) == 1 {
			n, err = sock.Write(c.fd, segs[0][q.woff:])
		} else {
			first := segs[0]
			segs[0] = first[q.woff:]
			n, err = sock.Writev(c.fd, segs, &c.tl.iov)
			segs[0] = first
		}
		if err != nil {
			if errnoIs(err, unix.EAGAIN) {
				break
			}
			if errnoIs(err, unix.EINTR) {
				continue
			}
			c.closeWith(c.ioError("write", err))
			return
		}
		c.wrote(n)
		c.consume(n)
		if n < off {
			break // the kernel took less than offered: it is full
		}
	}
	q.completeWrites()
	if c.state != connOpen {
		return
	}
	left := int(c.queued.Load())
	if left == 0 {
		c.update() // no more Writable
		if c.wshut.Load() && !c.wdone {
			c.shutdown()
			if c.state != connOpen {
				return
			}
		}
	}
	if c.full && left <= c.lw {
		c.full = false
		c.update()
		if fn := c.q.onDrain; fn != nil { // full: the queue exists
			c.callback(fn)
		}
	}
}

// offered returns the bytes one flush attempt hands the kernel: up to
// sock.MaxIovecs segments from the front of the queue.
func (q *writeQueue) offered() int {
	segs := q.wq[q.wh:]
	if len(segs) > sock.MaxIovecs {
		segs = segs[:sock.MaxIovecs]
	}
	n := -q.woff
	for _, s := range segs {
		n += len(s)
	}
	return n
}

// consume drops n written bytes from the front of the queue.
func (c *Conn) consume(n int) {
	c.queued.Add(-int64(n))
	c.tl.queued.Add(-int64(n))
	q := c.q
	for n > 0 {
		seg := q.wq[q.wh]
		rest := len(seg) - q.woff
		if n < rest {
			q.woff += n
			break
		}
		n -= rest
		c.tl.recycle(seg)
		q.wq[q.wh] = nil
		q.wh++
		q.woff = 0
	}
	if q.wh == len(q.wq) {
		q.wq, q.wh = q.wq[:0], 0
	}
}

// completeWrites completes the Write handles whose bytes all reached the
// kernel.
func (q *writeQueue) completeWrites() {
	for q.ww < len(q.waiters) && q.waiters[q.ww].end <= q.written {
		h := q.waiters[q.ww].h
		q.waiters[q.ww] = writeWaiter{}
		q.ww++
		h.settle(struct{}{}, nil)
	}
	if q.ww == len(q.waiters) {
		q.waiters, q.ww = q.waiters[:0], 0
	}
}

// ---- closing ----

// CloseWrite half-closes the connection: once the write queue is flushed it
// sends FIN (shutdown(SHUT_WR)); reading goes on. It returns a handle that
// completes when FIN was sent (fails if the connection closes first). Write
// and Send fail with ErrWriteClosed afterwards. If EOF was already read, the
// connection closes once FIN is sent. Idempotent; any goroutine.
func (c *Conn) CloseWrite() *Handle[struct{}] {
	l := c.l
	if !l.OnLoop() {
		h := runningHandle(c.l)
		l.exec(func() { c.closeWrite(h) })
		return h
	}
	switch {
	case c.state != connOpen:
		return Fail[struct{}](l, ErrConnClosed)
	case c.wdone:
		return Pure(l, struct{}{})
	case c.queued.Load() == 0:
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
	c.wshut.Store(true)
	if h != nil {
		q := c.queue()
		q.shutHs = append(q.shutHs, h)
	}
	if c.queued.Load() == 0 {
		c.shutdown()
	}
}

// shutdown sends FIN and completes the CloseWrite handles. On the loop.
func (c *Conn) shutdown() {
	if err := unix.Shutdown(c.fd, unix.SHUT_WR); err != nil {
		c.closeWith(c.ioError("shutdown", err))
		return
	}
	c.wdone = true
	if q := c.q; q != nil {
		hs := q.shutHs
		q.shutHs = nil
		for _, h := range hs {
			h.settle(struct{}{}, nil)
		}
	}
	c.maybeFinish()
}

// Close closes the connection at once: queued writes that have not reached
// the kernel are dropped (their handles fail with ErrConnClosed), the fd is
// closed, handles adopted by the scope are cancelled, and Closed completes.
// It returns a handle that completes when all that is done: at once on the
// loop (Closed's own handle when this call closed the connection, so that
// the common case allocates nothing), after a posted job elsewhere.
// Idempotent: closing a connection that is already closed, for whatever
// reason, completes. Any goroutine. To let the queue flush first, use
// CloseWrite (and let the peer close).
func (c *Conn) Close() *Handle[struct{}] {
	if c.l.OnLoop() { // the common case, without runOnLoop's closure
		c.closeWith(nil)
		if c.closed.state.Load() == uint32(Completed) {
			return &c.closed // this Close completed it: no handle to allocate
		}
		return Pure(c.l, struct{}{})
	}
	return runOnLoop(c.l, func() error { c.closeWith(nil); return nil })
}

// stop is the producer side of Closed: cancelling it (Loop.Stop does)
// closes the connection.
func (c *Conn) stop() { c.closeWith(ErrCancelled) }

// closeFD is Stop's last resort for an fd still registered at teardown.
func (c *Conn) closeFD() {
	c.closeWith(ErrCancelled)
	c.l.drain()
}

// closeWith closes the connection once: the fd, the queue, the timer, the
// pending handles (failed with err, or ErrConnClosed for nil, or cancelled
// for ErrCancelled), the scope, and last Closed. On the loop.
func (c *Conn) closeWith(err error) {
	if c.state == connClosed {
		return
	}
	was := c.state
	c.state = connClosed
	c.gone.Store(true)
	l := c.l
	if to := c.to; to != nil {
		l.removeTimer(&to.t)
	}
	clearFD(l, c.fd, c, c.ev != 0)
	c.ev = 0
	_ = sock.Close(c.fd)
	c.fd = -1
	if was == connOpen {
		c.tl.open.Add(-1)
		c.tl.closed.Add(1)
	}
	c.tl.queued.Add(-c.queued.Swap(0))
	q := c.q
	c.q = nil
	if q != nil {
		for _, s := range q.wq[q.wh:] {
			c.tl.recycle(s)
		}
	}
	c.tl.release(l)
	c.onRead, c.onEOF = nil, nil

	cancelled := errors.Is(err, ErrCancelled)
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
		for _, w := range q.waiters[q.ww:] {
			end(w.h)
		}
		for _, h := range q.shutHs {
			end(h)
		}
		q.waiters, q.ww, q.shutHs = nil, 0, nil
	}
	if s := c.scope.Load(); s != nil {
		s.close()
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
		l.jobs.push(job{d: (*connCloseCall)(c)})
	}
}

// OnClose sets the callback that runs, on the loop, once the connection has
// closed, however it closed. err is Closed's error: nil after Close or an
// orderly end, the cause otherwise (a reset, a timeout, a panicking
// callback), ErrCancelled when Loop.Stop closed it. It runs once, after
// Closed's direct continuations (those registered on Closed itself; what
// they start, and Wait or Done on Closed, may see the close before it),
// never inside this call; on a connection that
// is already closed it runs soon. Setting it again before it ran replaces
// it. Unlike Finally(c.Closed(), ...) it allocates nothing: for code that
// makes many short connections. Any goroutine; ErrNilFunc for nil.
func (c *Conn) OnClose(fn func(c *Conn, err error)) error {
	if fn == nil {
		return ErrNilFunc
	}
	if c.l.OnLoop() { // set at once: a closure less per connection
		c.setOnClose(fn)
		return nil
	}
	c.l.exec(func() { c.setOnClose(fn) })
	return nil
}

// setOnClose keeps fn for the close, or queues it if the connection is
// closed already. On the loop.
func (c *Conn) setOnClose(fn func(c *Conn, err error)) {
	if c.state != connClosed || c.onClose != nil { // not closed, or its call is queued and will take fn
		c.onClose = fn
		return
	}
	c.l.jobs.push(job{f: func() { c.callOnClose(fn) }})
}

// connCloseCall is a Conn as the job that runs its OnClose callback: a job
// of its own type, so that queueing it allocates nothing.
type connCloseCall Conn

func (cc *connCloseCall) inputDone() {
	c := (*Conn)(cc)
	if fn := c.onClose; fn != nil {
		c.onClose = nil
		c.callOnClose(fn)
	}
}

// callOnClose runs fn with Closed's outcome. On the loop, after the close.
func (c *Conn) callOnClose(fn func(c *Conn, err error)) {
	_, err := c.closed.Result()
	c.l.call(func() { fn(c, err) })
}

// ---- options and timeouts ----

// SetNoDelay sets or clears TCP_NODELAY (set by default; see
// ConnConfig.Nagle). The handle completes once the option is set: at once on
// the loop, after a posted job elsewhere. Any goroutine.
func (c *Conn) SetNoDelay(on bool) *Handle[struct{}] {
	v := 0
	if on {
		v = 1
	}
	return c.sockopt(func() error {
		c.noDelayDue = noDelayNone // the caller's choice stands
		return unix.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
	})
}

// SetKeepAlive turns TCP keep-alive on with idle time and probe interval d,
// or off for d == 0 (see ConnConfig.KeepAlive). The handle completes once the
// options are set. Any goroutine.
func (c *Conn) SetKeepAlive(d time.Duration) *Handle[struct{}] {
	if d < 0 {
		return Fail[struct{}](c.l, fmt.Errorf("aio: tcp: negative KeepAlive %v", d))
	}
	return c.sockopt(func() error { return sock.SetKeepAlive(c.fd, d) })
}

func (c *Conn) sockopt(set func() error) *Handle[struct{}] {
	return runOnLoop(c.l, func() error {
		if c.state != connOpen {
			return ErrConnClosed
		}
		return set()
	})
}

// SetReadTimeout sets ConnConfig.ReadTimeout (0 turns it off); it counts
// from the call. Any goroutine; an error for negative d or a closed
// connection.
func (c *Conn) SetReadTimeout(d time.Duration) error {
	return c.setTimeout("read", d, func(to *connTimeouts, now time.Duration) { to.read, to.lastRead = d, now })
}

// SetIdleTimeout sets ConnConfig.IdleTimeout (0 turns it off); it counts
// from the call. Any goroutine; an error for negative d or a closed
// connection.
func (c *Conn) SetIdleTimeout(d time.Duration) error {
	return c.setTimeout("idle", d, func(to *connTimeouts, now time.Duration) { to.idle, to.lastIO = d, now })
}

// setTimeout sets one of the timeouts and its reference time (set, given
// the loop's clock), on the loop.
func (c *Conn) setTimeout(what string, d time.Duration, set func(to *connTimeouts, now time.Duration)) error {
	if d < 0 {
		return fmt.Errorf("aio: tcp: negative %s timeout %v", what, d)
	}
	return c.onLoopDo(func() {
		if d == 0 && c.to == nil {
			return // off already: nothing to allocate
		}
		set(c.timeouts(), c.l.clock())
		c.armTimeouts()
	})
}

// startTimeouts starts the configured timeouts of a connection that just
// opened. On the loop.
func (c *Conn) startTimeouts() {
	if to := c.to; to != nil {
		now := c.l.clock()
		to.lastRead, to.lastIO = now, now
		c.armTimeouts()
	}
}

// deadline returns the earliest timeout deadline, if any is on.
func (c *Conn) deadline(to *connTimeouts) (time.Duration, bool) {
	var dl time.Duration
	ok := false
	if to.read > 0 && c.reading() {
		dl, ok = to.lastRead+to.read, true
	}
	if to.idle > 0 {
		if d := to.lastIO + to.idle; !ok || d < dl {
			dl, ok = d, true
		}
	}
	return dl, ok
}

// armTimeouts arms the timer for the earliest deadline. A timer already armed
// for an earlier time is left alone: it fires, sees the deadline moved, and
// re-arms. On the loop.
func (c *Conn) armTimeouts() {
	to := c.to
	if c.state != connOpen || to == nil {
		return
	}
	dl, ok := c.deadline(to)
	armed := to.t.index >= 0
	switch {
	case !ok:
		if armed {
			c.l.removeTimer(&to.t)
		}
		return
	case armed && to.t.when <= dl:
		return
	case armed:
		c.l.removeTimer(&to.t)
	}
	to.t.when = dl
	c.l.addTimer(&to.t)
}

// fire runs when the timer is due: the connection closes if a deadline
// really passed, else the timer is re-armed. On the loop.
func (c *Conn) fire() {
	if c.state != connOpen {
		return
	}
	now, to := c.l.Now(), c.to
	switch {
	case to.read > 0 && c.reading() && now >= to.lastRead+to.read:
		c.closeWith(ErrReadTimeout)
	case to.idle > 0 && now >= to.lastIO+to.idle:
		c.closeWith(ErrIdleTimeout)
	default:
		c.armTimeouts()
	}
}

func (c *Conn) base() *core { return &c.closed.core }
