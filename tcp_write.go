package aio

import (
	"unsafe"

	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// writeQueue is a connection's write queue: the bytes still to send are
// segs[head:], of which the first, segs[head], is sent from headOff on.
// Small writes are copied into chunks of chunkSize, larger ones into a
// segment of their own. Positions count the bytes of the stream since the
// queue was made: total were accepted by Write, written reached the
// kernel. Owned by the loop.
type writeQueue struct {
	segs    [][]byte // queued segments; those before head are sent (nil)
	head    int      // index of the first segment not fully sent
	headOff int      // bytes of segs[head] already sent
	total   uint64
	written uint64
	// waiters[waitHead:] are the Flush handles not completed yet, by end
	// position, oldest first.
	waiters     []writeWaiter
	waitHead    int
	shutWaiters []*Handle[struct{}] // CloseWrite handles waiting for the queue to flush
	onDrain     func(c *Conn)       // OnDrain, kept here with what it is about
}

// queue returns c's write queue, making it on first use. On the loop.
func (c *Conn) queue() *writeQueue {
	c.l.checkOnLoop()
	if c.q == nil {
		c.q = &writeQueue{}
	}
	return c.q
}

// writeWaiter is a Flush handle waiting for the stream to reach end.
type writeWaiter struct {
	end uint64
	h   *Handle[struct{}]
}

// OnDrain sets the callback that runs, on the loop, each time the write
// queue, after growing above the high-water mark (Full), has come down to
// the low-water mark, whatever held reading back or did not
// (ConnConfig.ReadWhileFull). Reading held back by the full queue has
// resumed when it runs. Any goroutine; ErrNilFunc for nil.
func (c *Conn) OnDrain(fn func(c *Conn)) error {
	if fn == nil {
		return ErrNilFunc
	}
	return c.runInlineIfOpen(func() { c.queue().onDrain = fn })
}

// Write sends b, or queues a copy of what the kernel does not take at once,
// and returns len(b): it never blocks and never writes short, so Conn is an
// io.Writer (fmt.Fprintf, json.Encoder and io.Copy write to it). b may be
// reused as soon as Write returns. On the loop the bytes are written at
// once if the queue is empty; elsewhere b is copied and the write posted,
// in the caller's order. It returns 0 and ErrConnClosed or ErrWriteClosed
// when the write is refused up front. On the loop a write the kernel
// refuses at once (the peer reset, a broken pipe) closes the connection,
// and Write returns 0 and the socket's error, for which errors.Is(err,
// ErrConnClosed) holds too, as for any write after it; an error that
// happens later, to queued bytes or a write posted from elsewhere, closes
// the connection (see Closed). Flush tells when the bytes reached the
// kernel. Writing past the high-water mark is allowed; the queue is then
// Full, and unless ConnConfig.ReadWhileFull is set the connection stops
// reading until it drains (see OnDrain). It allocates nothing when the
// kernel takes b at once. Any goroutine.
func (c *Conn) Write(b []byte) (int, error) {
	if c.l.OnLoop() {
		if _, err := c.write(b, false); err != nil {
			if err != ErrConnClosed && err != ErrWriteClosed {
				// It closed the connection: the socket's error, matching
				// ErrConnClosed too, as the next Write's error does.
				err = &kindError{err.Error(), []error{err, ErrConnClosed}}
			}
			return 0, err
		}
		return len(b), nil
	}
	if err := c.writeCheck(); err != nil {
		return 0, err
	}
	own := append([]byte(nil), b...)
	c.l.runLater(func() { _, _ = c.write(own, true) })
	return len(b), nil
}

// WriteString is Write for a string, without converting it to a byte slice
// first. Any goroutine.
func (c *Conn) WriteString(s string) (int, error) {
	return c.Write(unsafe.Slice(unsafe.StringData(s), len(s))) // Write only reads it
}

// Flush returns a handle that completes once every byte written before the
// call has reached the kernel (written to the socket; not acknowledged by
// the peer): at once when nothing is queued. The loop sends queued bytes
// by itself; Flush only tells when. It fails with ErrConnClosed, or the
// socket's error, if the bytes cannot be sent; cancelling it does not take
// them back (Close does). Any goroutine.
func (c *Conn) Flush() *Handle[struct{}] {
	l := c.l
	if l.OnLoop() {
		return c.flushHandle(nil)
	}
	if c.gone.Load() {
		return Fail[struct{}](l, ErrConnClosed)
	}
	h := runningHandle(l)
	l.runLater(func() { c.flushHandle(h) })
	return h
}

// flushHandle settles h, or makes a handle (h nil), for the bytes queued
// so far. On the loop.
func (c *Conn) flushHandle(h *Handle[struct{}]) *Handle[struct{}] {
	var err error
	if t := c.tls; t != nil && c.state == connOpen {
		t.flushPlain() // the TLS plaintext gathered goes to the queue first
	}
	switch {
	case c.state != connOpen:
		err = ErrConnClosed
	case c.queued.Load() > 0:
		if h == nil {
			h = runningHandle(c.l)
		}
		c.addWaiter(h)
		return h
	}
	if h == nil {
		if err != nil {
			return Fail[struct{}](c.l, err)
		}
		return Pure(c.l, struct{}{})
	}
	h.settle(struct{}{}, err)
	return h
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

// Writes made during a read callback (Conn.cork). A request/response
// protocol answers each request of a read with a write of its own: with
// pipelining, many small writes in one callback, which would be as many
// system calls. So the first write of a callback goes out at once, as any
// write does (a single reply costs no copy and no delay), and the small
// ones after it wait in the queue until the callback returns, to go out
// together in one writev: the same iteration, the same order. An OnFrame
// framer that has more bytes of the read after a frame lets the first
// write wait too. A large write, a Close, and the callback's end send
// what waits.
const (
	corkNone  = iota // not in a read callback
	corkArmed        // in one, nothing written yet
	corkOn           // in one, after its first write
	corkHeld         // corkOn, with small writes waiting in the queue
)

// uncork sends the small writes of the running read callback that wait
// (see corkHeld). On the loop.
func (c *Conn) uncork() {
	if t := c.tls; t != nil {
		t.flushPlain() // the TLS plaintext gathered (tls.go)
	}
	if c.cork == corkHeld {
		c.cork = corkOn
		if c.state == connOpen {
			c.flush()
		}
	}
}

// write sends b, queueing what the kernel does not take; owned says b is the
// connection's to keep. It reports whether anything was queued. On the loop.
func (c *Conn) write(b []byte, owned bool) (queued bool, err error) {
	c.l.checkOnLoop()
	switch {
	case c.state != connOpen:
		return false, ErrConnClosed
	case c.wshut.Load():
		return false, ErrWriteClosed
	case len(b) == 0:
		return false, nil
	}
	if t := c.tls; t != nil && !t.raw {
		return t.write(b) // plaintext: tls.go encrypts it and comes back raw
	}
	if len(b) >= chunkSize {
		// A large write is not copied to wait: what waits goes first.
		if c.uncork(); c.state != connOpen {
			return false, ErrConnClosed
		}
	}
	if q := c.q; q != nil {
		q.total += uint64(len(b))
	}
	direct := c.queued.Load() == 0 && c.splicedTo() == 0
	switch {
	case !direct || c.cork == corkNone:
	case c.cork == corkArmed:
		c.cork = corkOn
	case len(b) < chunkSize:
		c.cork = corkHeld
		direct = false
	}
	if direct {
		c.beforeWrite(len(b))
		c.tl.writes++
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
	c.sent(n)
}

// sent accounts for n bytes that reached the socket, from the queue or
// not (a Pipe's splice): the counter, the idle and write timeouts.
func (c *Conn) sent(n int) {
	c.tl.bytesOut.Add(uint64(n))
	if to := c.to; to != nil && to.idle|to.write != 0 {
		now := c.l.clock()
		to.lastIO, to.lastWrite = now, now
		to.sent += uint64(n)
	}
}

// addWaiter queues h to complete when the bytes written so far (at least
// one of them queued) have reached the kernel. On the loop.
func (c *Conn) addWaiter(h *Handle[struct{}]) {
	c.l.checkOnLoop()
	q := c.q // write queued something: q exists
	q.waiters, q.waitHead = compactFront(q.waiters, q.waitHead)
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
	q.segs, q.head = compactFront(q.segs, q.head)
	if k := len(q.segs); k > q.head && !owned {
		last := q.segs[k-1]
		if cap(last) == chunkSize && len(last) < chunkSize {
			m := copy(last[len(last):chunkSize], b)
			q.segs[k-1] = last[:len(last)+m]
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
		q.segs = append(q.segs, seg)
		b = b[len(seg):]
	}
	if c.queued.Add(int64(n)) == int64(n) {
		c.update() // the queue was empty: ask for Writable
	}
	c.tl.queued.Add(int64(n))
	if !c.full.Load() && int(c.queued.Load()) > int(c.hw) {
		c.full.Store(true)
		if !c.readWhileFull {
			c.held = true // stop reading until the queue drains
			c.update()
		}
	}
}

// flush writes the queue until it is empty or the kernel is full. On the
// loop.
func (c *Conn) flush() {
	c.l.checkOnLoop()
	q := c.q // bytes are queued: q exists
	for c.queued.Load() > 0 {
		segs := q.segs[q.head:]
		off := q.offered()
		var n int
		var err error
		c.beforeWrite(noDelayLateMax + 1) // a write was made before: the queue is its rest
		c.tl.writes++
		if len(segs) == 1 {
			n, err = sock.Write(c.fd, segs[0][q.headOff:])
		} else {
			first := segs[0]
			segs[0] = first[q.headOff:]
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
	}
	// The drain is news before the FIN that may follow and close the
	// connection: a program that pauses a source on Full hears it.
	if c.full.Load() && left <= int(c.lw) {
		c.full.Store(false)
		if c.held {
			c.held = false
			c.update()
		}
		if fn := c.q.onDrain; fn != nil { // full: the queue exists
			c.callback(fn)
			if c.state != connOpen {
				return
			}
		}
	}
	if c.queued.Load() == 0 && c.wshut.Load() && !c.wdone {
		c.shutdown()
	}
}

// offered returns the bytes one flush attempt hands the kernel: up to
// sock.MaxIovecs segments from the front of the queue.
func (q *writeQueue) offered() int {
	segs := q.segs[q.head:]
	if len(segs) > sock.MaxIovecs {
		segs = segs[:sock.MaxIovecs]
	}
	n := -q.headOff
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
		seg := q.segs[q.head]
		rest := len(seg) - q.headOff
		if n < rest {
			q.headOff += n
			break
		}
		n -= rest
		c.tl.recycle(seg)
		q.segs[q.head] = nil
		q.head++
		q.headOff = 0
	}
	if q.head == len(q.segs) {
		q.segs, q.head = q.segs[:0], 0
	}
}

// completeWrites completes the Flush handles whose bytes all reached the
// kernel.
func (q *writeQueue) completeWrites() {
	for q.waitHead < len(q.waiters) && q.waiters[q.waitHead].end <= q.written {
		h := q.waiters[q.waitHead].h
		q.waiters[q.waitHead] = writeWaiter{}
		q.waitHead++
		h.settle(struct{}{}, nil)
	}
	if q.waitHead == len(q.waiters) {
		q.waiters, q.waitHead = q.waiters[:0], 0
	}
}
