package aio

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// TLS on the loop with the standard, unmodified crypto/tls, and no
// goroutine per connection. A TLS connection is a Conn like any other
// whose OnRead (and OnFrame) deliver plaintext and whose Write and Close
// take plaintext; underneath, a tls.Conn runs over tlsConn, a net.Conn
// view of the Conn that crypto/tls reads ciphertext from and writes
// ciphertext to.
//
// The handshake cannot be resumed after a would-block (its state lives on
// its own stack and crypto/tls keeps its first error), so it runs where it
// can suspend: a Do coroutine on the loop, whose reads Await the
// connection's next bytes. Once it is done the coroutine ends and the
// record layer is driven straight from the read path: the loop's read
// buffer is lent to tlsConn, tls.Conn.Read is called until tlsConn
// reports a would-block (a net.Error whose Temporary is true, which
// crypto/tls retries instead of keeping), and the plaintext goes to the
// read callback. Writes are encrypted by tls.Conn.Write, whose records are
// gathered in the loop's scratch and written to the Conn's queue as one
// write: crypto/tls treats any error or short count from its conn as
// final, so the view accepts every byte, and the write queue (and so
// HighWater, Full and OnDrain) counts ciphertext.
//
// Pitfalls the design avoids (see issue 13): a handshake suspended in its
// coroutine holds crypto/tls's handshake and input locks, so the
// connection reaches no callback of the program before the handshake ended
// (a server's accept callback runs after it; a client's Dial handle
// completes after it); HandshakeContext gets context.Background (a
// cancellable context makes crypto/tls close the conn from another
// goroutine) and cancellation goes through the Do handle; close_notify is
// written before the FIN; clients keep RenegotiateNever (a renegotiation
// would run a handshake inside Read); a KeyUpdate makes Read write, which
// the view allows at any time.
//
// Ending: CloseWrite is the polite end. It writes close_notify after the
// plaintext written before it, then sends FIN once the queue is flushed;
// the connection closes when the peer's EOF (its close_notify, or FIN)
// has been read too. Close is abrupt, as on a plain connection: what is
// still queued is dropped, and close_notify with it (it cannot follow
// dropped records, or the peer would take a cut stream for a whole one);
// only when nothing is queued does Close send close_notify, then FIN.

// DefaultHandshakeTimeout is the TLS handshake timeout of a listener or a
// Dialer whose HandshakeTimeout is 0.
const DefaultHandshakeTimeout = 10 * time.Second

// errWouldBlock is what tlsConn's Read returns when it has no ciphertext
// left outside a handshake: crypto/tls keeps partial records and retries.
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "aio: tls: no ciphertext buffered" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// errTLSNotReady is the error of a plaintext write made before the
// handshake ended (only the library's own code could try).
var errTLSNotReady = errors.New("aio: tls write before the handshake ended")

// ErrHandshakeTimeout is the error a TLS connection closes with when its
// handshake did not end within the handshake timeout. errors.Is(err,
// ErrTimeout) holds, and it is a net.Error whose Timeout is true.
var ErrHandshakeTimeout error = &kindError{"aio: tls handshake timeout", []error{ErrTimeout}}

// tlsConn is a TLS connection's state (Conn.tls) and the net.Conn that
// crypto/tls sees. Owned by the loop.
type tlsConn struct {
	c  *Conn     // immutable
	tc *tls.Conn // immutable

	// Ciphertext received and not yet taken by crypto/tls: in (the
	// connection's own copy: the handshake's bytes, or what was left when
	// reading paused) first, then lent (the loop's read buffer, during a
	// read).
	in   []byte
	lent []byte
	eof  bool // the peer's FIN was read
	// rest is what Read has still to hand of the record it started:
	// crypto/tls never gets bytes past a record's end (see Read).
	rest int
	// more says the last plaintext Read filled its buffer: crypto/tls
	// may hold more of the record's plaintext.
	more bool

	co *Co               // the handshake's coroutine while it runs
	hs *Handle[struct{}] // the handshake, with its timeout, while it runs
	// waiting says the handshake is suspended in Read, awaiting the next
	// bytes or the FIN (tls_turn.go).
	waiting bool
	// onDone runs on the loop when the handshake ended: the accept
	// callback of a server, the Dial's completion of a client.
	onDone func(t *tlsConn, err error)

	done     bool // the handshake ended well: plaintext flows
	raw      bool // a write of ciphertext is in progress: Conn.write takes bytes as they are
	batch    bool // gather ciphertext in the loop's scratch (during a plaintext write)
	first    bool // batch, and no record written yet: the first one goes straight
	notified bool // close_notify was written
	parked   bool // pumping stopped with reading off: resume when it is on again
	// sawEOF: crypto/tls returned io.EOF (a close_notify, or a FIN between
	// records) while reading was off; it returns it again, so pump asks
	// it once reading is back, though no byte is buffered.
	sawEOF bool
	// full says the handshake holds a whole record it has not taken:
	// reading stops until it took it (see input).
	full   bool
	queued bool // the handshake waits in tlsLoop.steps for its turn (tls_turn.go)
	// records counts the records read after the handshake in the loop
	// iteration turn; throttled, that the connection waits in
	// tlsLoop.throttled to read again (tls_turn.go).
	records   int
	turn      uint64
	throttled bool
	// inRead says pump is in crypto/tls's Read: what crypto/tls writes
	// then answers what it read (a KeyUpdate's answer, an alert).
	inRead bool
}

// tlsLoop is a loop's TLS scratch (tcpLoop.tls), made with its first TLS
// connection. Owned by the loop.
type tlsLoop struct {
	plain []byte // plaintext read from crypto/tls, handed to read callbacks
	out   []byte // ciphertext of one plaintext write, written as one
	// pend is plaintext the read callback running on pendFor's connection
	// wrote, to encrypt as one when it returns.
	pend    []byte
	pendFor *tlsConn
	// steps are the handshakes whose awaited bytes arrived, to resume
	// a few per turn from stepHead on (tls_turn.go).
	steps    []*tlsConn
	stepHead int
	// throttled are the connections that read tlsRecordsPerTurn records
	// in this turn: they read again once its poll's I/O is done
	// (tls_turn.go).
	throttled []*tlsConn
}

// tlsScratchMax bounds the ciphertext gathered before it is written: a
// large plaintext write goes out in steps of this, not as one copy.
const tlsScratchMax = 256 << 10

func (t *tcpLoop) tlsScratch() *tlsLoop {
	if t.tls == nil {
		t.tls = &tlsLoop{plain: make([]byte, ReadBufferSize)}
	}
	return t.tls
}

// setupTLS makes c a TLS connection, reading for its handshake. On the
// loop, before the program sees c.
func (c *Conn) setupTLS(cfg *tls.Config, server bool) *tlsConn {
	c.l.checkOnLoop()
	t := &tlsConn{c: c}
	if server {
		t.tc = tls.Server(t, cfg)
	} else {
		t.tc = tls.Client(t, cfg)
	}
	c.tls = t
	c.onRead = dropRead // reading on: readSome hands the bytes to t
	c.update()
	return t
}

// startTLS makes c a TLS connection and starts the handshake in a Do
// coroutine, bounded by timeout; onDone runs when it ends. On the loop,
// before the program sees c.
func (c *Conn) startTLS(cfg *tls.Config, server bool, timeout time.Duration, onDone func(*tlsConn, error)) {
	t := c.setupTLS(cfg, server)
	t.onDone = onDone
	hs := Do(c.l, t.handshake)
	if timeout = handshakeTimeout(timeout); timeout > 0 {
		hs = Within(hs, timeout)
	}
	t.hs = hs
	hs.register(t)
}

// handshakeTimeout applies the default to a configured timeout: 0 is the
// default, negative none.
func handshakeTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultHandshakeTimeout
	}
	return d
}

// handshakeWithin bounds hs, a dial's or an adoption's handshake with
// addr, by the handshake timeout d (see handshakeTimeout). Within fails
// with a bare ErrTimeout; the deadline's failure is made a listener's,
// ErrHandshakeTimeout naming addr. Cancelling the result still reaches
// hs: Catch withdraws from Within, which withdraws from hs. Any
// goroutine.
func handshakeWithin(hs *Handle[*Conn], d time.Duration, addr string) *Handle[*Conn] {
	if d = handshakeTimeout(d); d <= 0 {
		return hs
	}
	return Catch(Within(hs, d), func(err error) (*Conn, error) {
		// hs failed on its own (a read timeout, say): its error stands.
		if hs.Status() != Failed && errors.Is(err, ErrTimeout) {
			return nil, fmt.Errorf("aio: tls handshake %s: %w after %v", addr, ErrHandshakeTimeout, d)
		}
		return nil, err
	})
}

// handshake is the Do body of the handshake.
func (t *tlsConn) handshake(co *Co) (struct{}, error) {
	t.co = co
	defer func() { t.co = nil }()
	// Background: a cancellable context would make crypto/tls close the
	// conn from a goroutine of its own. Cancellation reaches the Await in
	// Read instead.
	return struct{}{}, t.tc.HandshakeContext(context.Background())
}

// inputDone runs on the loop when the handshake (with its timeout) ended.
func (t *tlsConn) inputDone() {
	hs := t.hs
	t.hs = nil
	_, err := hs.Result()
	if errors.Is(err, ErrTimeout) {
		err = ErrHandshakeTimeout
	}
	err = t.ended(err)
	done := t.onDone
	t.onDone = nil
	done(t, err)
}

// ended takes the handshake's outcome: counted, and either plaintext may
// flow (the program's reader comes next) or the connection is closed with
// the error (or answered in plaintext and ending, see answerPlain), which it returns wrapped once, naming the peer (errors.Unwrap
// gives the cause back). On the loop.
func (t *tlsConn) ended(err error) error {
	c := t.c
	if c.state != connOpen && err == nil {
		err = ErrConnClosed
	}
	if err != nil {
		c.tl.tlsFailed.Add(1)
		reply := t.notTLSReply(err) // before detachConn: it looks at Conn
		err = fmt.Errorf("aio: tls handshake %s: %w", c.raddr, detachConn(err))
		switch {
		case c.state != connOpen:
		case len(reply) > 0:
			c.answerPlain(reply)
		default:
			c.closeWith(err)
		}
		t.in = nil
		return err
	}
	c.tl.tlsDone.Add(1)
	t.done = true
	if len(t.in) == 0 {
		t.in = nil // an idle connection keeps no buffer
	}
	c.onRead = nil
	t.parked = true
	c.update()
	return nil
}

// detachConn returns err, a crypto/tls error, fit to leave the package:
// a RecordHeaderError (a first record that is not TLS, say an HTTP
// server's answer) carries the conn crypto/tls read it from, which is
// tlsConn, the loop's alone; a program that wrote to it (as net/http
// does, to answer with a 400) would race the loop. Its Conn is cleared;
// the rest of the error stays (crypto/tls returns it unwrapped).
func detachConn(err error) error {
	if rh, ok := err.(tls.RecordHeaderError); ok && rh.Conn != nil {
		rh.Conn = nil
		return rh
	}
	return err
}

// closing ends what t has in progress as the connection closes: the
// plaintext gathered is dropped (as the write queue is), and a handshake
// in progress fails (the Await in Read returns). On the loop.
func (t *tlsConn) closing() {
	if s := t.c.tl.tls; s != nil && s.pendFor == t {
		s.pendFor, s.pend = nil, s.pend[:0]
	}
	// The ciphertext not taken goes too (up to a read buffer's worth,
	// kept when reading paused): nobody will read it, and the program
	// may keep the closed Conn for long. A handshake's Read then sees
	// the close.
	t.in, t.lent = nil, nil
	t.closeHandshake()
}

// closeHandshake ends a handshake in progress: its Read returns
// ErrConnClosed. On the loop.
func (t *tlsConn) closeHandshake() {
	if t.waiting {
		// A job: the coroutine resumes from the loop goroutine only, and
		// this may run in another Do body.
		t.c.l.jobs.push(job{t: (*tlsWake)(t)})
	}
}

// input takes b, ciphertext just read into the loop's read buffer. On the
// loop, from readSome.
func (t *tlsConn) input(b []byte) {
	if !t.done {
		t.in = append(t.in, b...)
		if len(t.in) >= maxRecord && !t.full {
			// A whole record is there, all the handshake's next step
			// can take: let the kernel hold the rest (and the peer's
			// window close) until it took it, or a peer flooding a
			// handshake that waits for its turn grows t.in unbounded.
			t.full = true
			t.c.onRead = nil
			t.c.update()
		}
		t.stepReady()
		return
	}
	t.lent = b
	t.pump()
	if len(t.lent) > 0 && t.c.state == connOpen { // reading stopped: keep the rest
		t.in = append(t.in, t.lent...)
	}
	t.lent = nil
}

// inputEOF takes the peer's FIN. On the loop, from readSome.
func (t *tlsConn) inputEOF() {
	t.eof = true
	if !t.done {
		t.stepReady()
		return
	}
	t.pump()
}

// pump reads plaintext from crypto/tls, out of the ciphertext it has, and
// hands it to the read callback, while the connection reads. On the loop.
func (t *tlsConn) pump() {
	c := t.c
	t.parked = false
	buf := c.tl.tlsScratch().plain
	for {
		if !c.reading() {
			t.parked = c.state == connOpen
			return
		}
		n := 0
		var err error
		for n < len(buf) && err == nil {
			if !t.more && !t.eof && !t.sawEOF && !t.recordReady() {
				// Nothing to read: a would-block from Read would cost
				// crypto/tls an allocation.
				err = errWouldBlock
				break
			}
			var m int
			t.inRead = true
			m, err = t.tc.Read(buf[n:])
			t.inRead = false
			t.more = m == len(buf)-n
			n += m
			if c.held || t.throttled || c.state != connOpen {
				break // what crypto/tls wrote while it read filled the queue (Write) or failed, or the turn's records are read
			}
		}
		if c.state != connOpen {
			// crypto/tls wrote while it read (an alert, a KeyUpdate's
			// answer), the write failed and closed the connection: what
			// it read has nobody to go to (onRead is nil now).
			return
		}
		if n > 0 {
			c.callReadCorked(buf[:n])
		}
		switch {
		case err == nil:
		case err == errWouldBlock:
			if c.state == connOpen && !c.reading() {
				t.parked = true
			}
			return
		case errors.Is(err, io.EOF): // close_notify, or a FIN between records
			// crypto/tls keeps returning io.EOF, so an EOF that arrives
			// while reading is off waits for reading to resume.
			if c.reading() {
				c.gotEOF() // the plaintext stream ends as a plain one does
			} else {
				t.sawEOF = true
				t.parked = c.state == connOpen
			}
			return
		default:
			if c.state == connOpen {
				c.closeWith(c.ioError("tls read", detachConn(err)))
			}
			return
		}
	}
}

// resume pumps again once reading is back on after it stopped with
// plaintext possibly buffered. On the loop, from syncInterest.
func (t *tlsConn) resume() {
	if t.parked && t.done && t.c.reading() {
		t.parked = false
		t.c.l.jobs.push(job{t: (*tlsResume)(t)})
	}
}

// tlsResume is a tlsConn as the job that pumps it again: a job of its own
// type, as frameResume is, so that queueing it allocates nothing.
type tlsResume tlsConn

func (r *tlsResume) runTask(*Loop) {
	t := (*tlsConn)(r)
	if t.c.reading() { // reading is false once closed
		t.pump()
	}
}

// write encrypts plaintext b and queues the ciphertext on the connection.
// The small writes of a read callback are gathered and encrypted together
// when it returns (uncork): one record, not one per write, as a plain
// connection sends them in one writev. On the loop, from Conn.write.
func (t *tlsConn) write(b []byte) (bool, error) {
	c := t.c
	if !t.done {
		return false, errTLSNotReady
	}
	s := c.tl.tlsScratch()
	if c.cork != corkNone && len(b) < chunkSize {
		if s.pendFor != t {
			if s.pendFor != nil {
				s.pendFor.flushPlain()
			}
			s.pendFor = t
		}
		s.pend = append(s.pend, b...)
		if len(s.pend) >= chunkSize {
			t.flushPlain()
		}
		return true, nil
	}
	if s.pendFor == t {
		t.flushPlain() // what was gathered goes first
		if c.state != connOpen {
			return false, ErrConnClosed
		}
	}
	return t.encrypt(b)
}

// flushPlain encrypts and writes the plaintext gathered by write, if it
// is t's. On the loop.
func (t *tlsConn) flushPlain() {
	s := t.c.tl.tls
	if s == nil || s.pendFor != t {
		return
	}
	s.pendFor = nil
	p := s.pend
	s.pend = s.pend[:0] // encrypt does not gather: p stays intact
	if t.c.state == connOpen {
		_, _ = t.encrypt(p) // an error closes the connection
	}
}

// encrypt writes plaintext b as TLS records. On the loop.
func (t *tlsConn) encrypt(b []byte) (bool, error) {
	c := t.c
	s := c.tl.tls
	t.batch, t.first = true, true
	_, err := t.tc.Write(b)
	t.batch, t.first = false, false
	queued := t.flushScratch(s)
	if err != nil && c.state == connOpen {
		c.closeWith(c.ioError("tls write", err))
	}
	if c.state != connOpen {
		return queued, ErrConnClosed
	}
	return queued, err
}

// flushScratch writes the ciphertext gathered in s. It reports whether
// any of it was queued.
func (t *tlsConn) flushScratch(s *tlsLoop) bool {
	if len(s.out) == 0 {
		return false
	}
	queued, _ := t.writeRaw(s.out) // an error closes the connection
	s.out = s.out[:0]
	return queued
}

// writeRaw writes ciphertext p to the connection as it is.
func (t *tlsConn) writeRaw(p []byte) (bool, error) {
	t.raw = true
	queued, err := t.c.write(p, false)
	t.raw = false
	return queued, err
}

// closeNotify writes close_notify once, after a handshake that ended
// well. On the loop, before a FIN.
func (t *tlsConn) closeNotify() {
	c := t.c
	if !t.done || t.notified || c.state != connOpen || c.wshut.Load() {
		return
	}
	t.notified = true
	if t.flushPlain(); c.state != connOpen {
		return
	}
	_ = t.tc.CloseWrite() // through Write: an error closes the connection
}

// maxRecord is the largest TLS record crypto/tls accepts (maxCiphertext
// plus the header); a header that claims more is handed over at once, for
// crypto/tls to reject.
const maxRecord = recordHeader + 16384 + 2048

// recordHeader is the size of a TLS record's header, whose last two bytes
// are the length of the record's body.
const recordHeader = 5

// buffered is the ciphertext t holds that crypto/tls has not taken.
func (t *tlsConn) buffered() int { return len(t.in) + len(t.lent) }

// peek is byte i of the ciphertext buffered: in, then lent.
func (t *tlsConn) peek(i int) byte {
	if i < len(t.in) {
		return t.in[i]
	}
	return t.lent[i-len(t.in)]
}

// recordLen is the length of the record whose header starts the buffered
// ciphertext, or 0 if the header is not all buffered.
func (t *tlsConn) recordLen() int {
	if t.buffered() < recordHeader {
		return 0
	}
	return recordHeader + (int(t.peek(3))<<8 | int(t.peek(4)))
}

// recordReady reports whether a whole record is buffered (or the rest of
// the one crypto/tls has started), so that a plaintext Read will not need
// a would-block: crypto/tls holds no partial record of its own, since Read
// never hands it bytes past a record's end.
func (t *tlsConn) recordReady() bool {
	if t.rest > 0 {
		return t.buffered() >= t.rest
	}
	n := t.recordLen()
	return n > 0 && (t.buffered() >= n || n > maxRecord)
}

// Read is net.Conn's, for crypto/tls: the ciphertext received, up to the
// end of the record it is in (after the peer's FIN, all of it), so that
// what crypto/tls holds between records is nothing. During the handshake
// it waits (in the coroutine) for a record's header and its bytes; after
// it, it reports a would-block, which pump avoids (recordReady).
func (t *tlsConn) Read(p []byte) (int, error) {
	for t.buffered() == 0 || (t.rest == 0 && !t.eof && t.recordLen() == 0) {
		switch {
		case t.eof:
			return 0, io.EOF
		case t.c.state != connOpen:
			return 0, t.closedErr()
		case t.co == nil:
			return 0, errWouldBlock
		}
		if err := t.await(); err != nil {
			return 0, err
		}
	}
	if t.rest == 0 {
		if t.rest = t.recordLen(); t.rest == 0 {
			t.rest = t.buffered() // a header cut by the FIN
		}
		if t.inRead {
			t.recordRead()
		}
	}
	if len(p) > t.rest {
		p = p[:t.rest]
	}
	n := copy(p, t.in)
	t.in = t.in[n:]
	if len(t.in) == 0 {
		t.in = nil
	}
	m := copy(p[n:], t.lent)
	t.lent = t.lent[m:]
	t.rest -= n + m
	if t.full && len(t.in) < maxRecord {
		t.full = false // the handshake took the record: read on
		if c := t.c; c.state == connOpen && !t.done {
			c.onRead = dropRead
			c.update()
		}
	}
	return n + m, nil
}

// Write is net.Conn's, for crypto/tls: ciphertext, all of it taken (a
// short count or an error would be final for crypto/tls).
func (t *tlsConn) Write(p []byte) (int, error) {
	c := t.c
	if t.batch && t.first {
		// The first record of a write (most writes have only one) is
		// written from crypto/tls's buffer, not copied to the scratch;
		// those after it are gathered, to be written as one.
		t.first = false
	} else if t.batch {
		s := c.tl.tls
		if len(s.out)+len(p) > tlsScratchMax {
			t.flushScratch(s)
		}
		s.out = append(s.out, p...)
		return len(p), nil
	}
	if _, err := t.writeRaw(p); err != nil {
		return 0, err
	}
	if !t.inRead { // not crypto/tls answering what it reads: a plaintext write's records, the handshake's, a close_notify
		return len(p), nil
	}
	// What crypto/tls writes of its own after the handshake answers what
	// it read (a KeyUpdate asking for one, an alert): reading more makes
	// more of it. So a full queue stops reading until it drains, as
	// without ReadWhileFull, whatever that says: a peer that floods
	// KeyUpdates and reads nothing otherwise grew the queue without bound.
	if c.full.Load() && !c.held {
		c.held = true
		c.update()
	}
	return len(p), nil
}

// Close is net.Conn's: crypto/tls calls it from tls.Conn.Close, which the
// library does not call; the connection closes through Conn.
func (t *tlsConn) Close() error { return nil }

func (t *tlsConn) LocalAddr() net.Addr              { return net.TCPAddrFromAddrPort(t.c.laddr) }
func (t *tlsConn) RemoteAddr() net.Addr             { return net.TCPAddrFromAddrPort(t.c.raddr) }
func (t *tlsConn) SetDeadline(time.Time) error      { return nil }
func (t *tlsConn) SetReadDeadline(time.Time) error  { return nil }
func (t *tlsConn) SetWriteDeadline(time.Time) error { return nil }

// TLS reports the state of a TLS connection's handshake: its version,
// cipher suite, negotiated protocol (ALPN), server name, peer
// certificates and whether it resumed a session. ok is false for a plain
// TCP connection. A connection reaches the program after its handshake,
// so the state is complete. Any goroutine.
func (c *Conn) TLS() (state tls.ConnectionState, ok bool) {
	t := c.tls
	if t == nil {
		return tls.ConnectionState{}, false
	}
	return t.tc.ConnectionState(), true
}

// tlsClosing is the TLS side of a graceful close (Close): close_notify,
// then the FIN (shutdown, a half-close) before the fd is closed, so that
// the alert reaches the peer ahead of anything abortive, but only when
// nothing is queued. What is queued is dropped by the close, as on a
// plain connection, and close_notify cannot follow dropped records (it
// would tell the peer that a cut stream ended well): then none is sent.
// On the loop, from closeWith.
func (c *Conn) tlsClosing() {
	t := c.tls
	c.uncork() // a read callback's writes go first, as Close's do
	if c.state != connOpen || c.queued.Load() > 0 || c.splicedTo() > 0 {
		return // the queue is dropped: no close_notify after it
	}
	t.closeNotify()
	c.uncork() // in a read callback the alert may wait in the queue: send it
	if c.state == connOpen && t.notified && !c.wdone && c.queued.Load() == 0 {
		if unix.Shutdown(c.fd, unix.SHUT_WR) == nil {
			c.wdone = true
		}
	}
}

// closedErr is what a handshake's Read returns once the connection has
// closed: the cause it closed with (a read timeout, say), which the
// handshake fails with, or ErrConnClosed for a close without one. On the
// loop.
func (t *tlsConn) closedErr() error {
	if _, err := t.c.closed.Result(); err != nil && !errors.Is(err, ErrCancelled) {
		return err
	}
	return ErrConnClosed
}
