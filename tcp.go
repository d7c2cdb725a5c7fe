package aio

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// TCP on the loop, in the style of libuv's streams: a Listener accepts in
// batches and hands each new connection to a callback on the loop; a Conn
// reads into the loop's one shared read buffer and calls back with the bytes,
// queues writes that did not fit in the kernel and flushes them with writev,
// and pauses reading when its write queue passes a high-water mark. Nothing
// here starts a goroutine: every callback runs on the loop that owns the
// socket, and whatever completes later (a Dial, a write reaching the kernel,
// a half-close, the end of a connection) is a handle.
//
// Every fd has one owner, the Listener or Conn that opened or accepted it, and
// one release path, that object's close on the loop. Loop.Stop reaches them
// through the loop's fd table: after its last pass cancelling pending
// handles, it closes every socket still registered there (closeFDs, see
// stop.go), so that the cancel callbacks of that pass still find their
// connections open. A Listener's Closed is also a tracked producer, which
// that pass cancels, closing it earlier; a Conn's is not (see newConn).
// Either way Closed ends cancelled.

var (
	// ErrConnClosed is the error of an operation on a Conn that is closed, and
	// of the writes still queued when Close ran. errors.Is(err, net.ErrClosed)
	// holds for it too.
	ErrConnClosed error = &kindError{"aio: tcp connection closed", []error{net.ErrClosed}}
	// ErrWriteClosed is returned by Write after CloseWrite.
	ErrWriteClosed = errors.New("aio: tcp write after CloseWrite")
	// ErrReadTimeout is the error a Conn closes with when reading is on and no
	// byte arrived for ConnConfig.ReadTimeout. errors.Is(err, ErrTimeout)
	// holds, and it is a net.Error whose Timeout is true.
	ErrReadTimeout error = &kindError{"aio: tcp read timeout", []error{ErrTimeout}}
	// ErrIdleTimeout is the error a Conn closes with when nothing was read or
	// written for ConnConfig.IdleTimeout. errors.Is(err, ErrTimeout) holds,
	// and it is a net.Error whose Timeout is true.
	ErrIdleTimeout error = &kindError{"aio: tcp idle timeout", []error{ErrTimeout}}
	// ErrWriteTimeout is the error a Conn closes with when bytes waited to be
	// sent and neither the kernel took any nor the peer acknowledged any for
	// ConnConfig.WriteTimeout (the peer stopped reading). errors.Is(err, ErrTimeout) holds, and it is a
	// net.Error whose Timeout is true.
	ErrWriteTimeout error = &kindError{"aio: tcp write timeout", []error{ErrTimeout}}
	// errConnStopped is what OnClose hears when Loop.Stop closed the
	// connection: errors.Is(err, ErrStopped) and (as for every handle Stop
	// ends) errors.Is(err, ErrCancelled) hold, and so do ErrConnClosed and
	// net.ErrClosed: the program's side closed it.
	errConnStopped error = &kindError{"aio: tcp connection closed: loop stopped", []error{ErrConnClosed, ErrStopped, ErrCancelled}}
)

// kindError is an error with a text of its own that is also (errors.Is) each
// of its kinds, without repeating their texts ("aio: tcp read timeout", not
// "aio: tcp read timeout: aio: timeout").
type kindError struct {
	text  string
	kinds []error
}

func (e *kindError) Error() string   { return e.text }
func (e *kindError) Unwrap() []error { return e.kinds }

// Timeout is net.Error's: true for the timeouts.
func (e *kindError) Timeout() bool { return errors.Is(e, ErrTimeout) }

// Temporary is net.Error's (deprecated there): as Timeout.
func (e *kindError) Temporary() bool { return e.Timeout() }

// Defaults of ListenConfig and ConnConfig.
const (
	DefaultBacklog     = 4096            // the kernel caps it (net.core.somaxconn)
	DefaultAcceptBatch = 128             // accepts per readiness event before the loop moves on
	DefaultHighWater   = 256 << 10       // write-queue bytes above which reading pauses
	DefaultLinger      = 2 * time.Second // a lingering close's bound after the FIN
	ReadBufferSize     = 64 << 10        // the loop's shared read buffer
)

// A read into the whole read buffer is made raw where reads are (see
// internal/sock): this fails to compile if the two sizes part.
var _ = [1]struct{}{}[ReadBufferSize-sock.RawCopyMax]

// ConnConfig holds the options of a connection, accepted or dialed. The zero
// value is ready to use.
type ConnConfig struct {
	// Nagle leaves Nagle's algorithm on. By default TCP_NODELAY is set, as Go's
	// net package does: small writes go out at once. (A dialed connection whose
	// first write is small gets it just before its second write system call:
	// Nagle never holds back such a first write.)
	Nagle bool
	// KeepAlive > 0 turns TCP keep-alive on with this idle time before the
	// first probe and between probes, in whole seconds rounded up, at most
	// 32767 s (Linux's limit; a longer time means that), where the platform
	// lets it be set (openbsd keeps its system-wide timers). 0 leaves it
	// off; negative is an error.
	KeepAlive time.Duration
	// HighWater is the write-queue size in bytes above which the queue is
	// full: Conn.Full reports it and, unless ReadWhileFull is set, the
	// connection stops reading. 0 means DefaultHighWater.
	HighWater int
	// LowWater is the write-queue size at or below which a full queue is
	// drained: OnDrain runs and reading held back by the queue resumes.
	// 0 means HighWater/4.
	LowWater int
	// ReadWhileFull keeps the connection reading while its write queue is
	// full, so that its two directions have independent flow control: what
	// a proxy, a tunnel or any two-way stream needs (Pipe sets it). One
	// exception: on TLS, what crypto/tls writes in answer to what it reads
	// (a KeyUpdate's answer, an alert) stops reading on a full queue all
	// the same, as reading more would make more of it.
	//
	// By default a full write queue stops reading until it drains, so that
	// a request/response server spends no memory on a client that sends
	// requests without reading the replies: the client's own sends stall.
	// The failure mode of that default is a deadlock between two peers that
	// each write before they read: if the peer stops reading until it can
	// write its replies, and this side stops reading those replies until
	// the peer reads, neither moves. With ReadWhileFull the program bounds
	// the queue itself: pause the source of what it writes (PauseRead on
	// the other connection) while Full, and resume it in OnDrain.
	ReadWhileFull bool
	// ReadTimeout closes the connection with ErrReadTimeout when it is reading
	// (OnRead set, not paused) and no byte arrived for this long. 0: none.
	ReadTimeout time.Duration
	// IdleTimeout closes the connection with ErrIdleTimeout when no byte was
	// read and none reached the kernel for this long. 0: none.
	IdleTimeout time.Duration
	// WriteTimeout closes the connection with ErrWriteTimeout when bytes
	// wait to be sent (the write queue, or a Pipe's) and for this long the
	// kernel took none of them and (on Linux) the peer acknowledged none
	// of those the kernel holds: a peer that stopped reading. Progress
	// restarts it, even while a kernel buffer of megabytes drains too
	// slowly to take new bytes; but progress is what the peer's TCP
	// acknowledges, and a peer that reads slowly opens its window, and so
	// lets acknowledged bytes through, only about a segment (its MSS: 64
	// KiB on loopback, some 1.4 KiB on Ethernet) at a time. So a peer is
	// closed for reading slower than about one MSS per WriteTimeout (on
	// loopback with 1 s: 4 KiB every 200 ms, 20 KB/s, is closed; 80 KB/s
	// is not). 0: none.
	WriteTimeout time.Duration
	// Linger bounds a draining connection's lingering close (Conn.Drain,
	// Listener.Drain, Runtime.Shutdown): how long, after its FIN, it waits
	// for the peer's EOF, reading and dropping what the peer sends, as
	// nginx's lingering_timeout does. The FIN waits for the write queue
	// to flush and the linger starts only then, so a peer that does not
	// read is bounded by WriteTimeout instead (see Conn.Drain). A peer
	// that never closes holds the connection (and a drain without a
	// grace) this long. 0 means DefaultLinger; negative closes right
	// after the FIN, so bytes the peer sends after it may reset the
	// connection and cost the peer replies it has not read yet. A
	// ReadTimeout or IdleTimeout that runs out first ends the linger
	// early; the connection still closes with no error, as at the
	// linger's own end (it had ended well already).
	Linger time.Duration
	// ReadBuffer and WriteBuffer > 0 set the kernel's receive and send
	// buffer sizes (SO_RCVBUF, SO_SNDBUF; Linux doubles the value and caps
	// it at net.core.rmem_max/wmem_max) before the connection is
	// established, so that the receive window is scaled for it: on the
	// listening socket for accepted connections (which inherit them), on
	// the socket before connect for Dial. 0 leaves the system's default
	// (and its autotuning); negative is an error; a size beyond an int32
	// counts as the largest int32. Keep ReadBuffer above the
	// path's segment size (64 KiB over Linux's loopback): below one
	// segment, Linux stops advertising the window that reading opens, and
	// the peer sends only at its zero-window probes, seconds apart (as with
	// package net).
	//
	// WriteBuffer is also where a peer that reads slowly shows: the
	// kernel takes writes until its send buffer (megabytes, autotuned,
	// by default) is full, and only then does the write queue grow
	// towards Full. A server that fans out to many clients (a chat room,
	// a feed) and drops or closes the ones that fall behind sets it
	// small, so that each client costs at most WriteBuffer in the kernel
	// and HighWater in the queue, and a laggard is seen early.
	ReadBuffer, WriteBuffer int
}

// withDefaults validates c and fills in its defaults.
func (c ConnConfig) withDefaults() (ConnConfig, error) {
	switch {
	case c.KeepAlive < 0:
		return c, fmt.Errorf("%w: tcp: negative KeepAlive %v", ErrInvalidArgument, c.KeepAlive)
	case c.HighWater < 0 || c.LowWater < 0:
		return c, fmt.Errorf("%w: tcp: negative water mark (high %d, low %d)",
			ErrInvalidArgument, c.HighWater, c.LowWater)
	case c.ReadTimeout < 0 || c.IdleTimeout < 0 || c.WriteTimeout < 0:
		return c, fmt.Errorf("%w: tcp: negative timeout (read %v, idle %v, write %v)",
			ErrInvalidArgument, c.ReadTimeout, c.IdleTimeout, c.WriteTimeout)
	case c.ReadBuffer < 0 || c.WriteBuffer < 0:
		return c, fmt.Errorf("%w: tcp: negative buffer size (read %d, write %d)",
			ErrInvalidArgument, c.ReadBuffer, c.WriteBuffer)
	}
	// The kernel takes an int32: a larger size would wrap, to the
	// minimum buffer (1<<32) or anything else, instead of to the cap.
	c.ReadBuffer, c.WriteBuffer = min(c.ReadBuffer, math.MaxInt32), min(c.WriteBuffer, math.MaxInt32)
	if c.HighWater == 0 {
		c.HighWater = DefaultHighWater
	}
	if c.LowWater == 0 {
		c.LowWater = c.HighWater / 4
	}
	if c.LowWater > c.HighWater {
		return c, fmt.Errorf("%w: tcp: LowWater %d above HighWater %d", ErrInvalidArgument, c.LowWater, c.HighWater)
	}
	return c, nil
}

// ListenConfig holds the options of Listen. The zero value is ready to use.
type ListenConfig struct {
	// Backlog is listen(2)'s backlog. 0 means DefaultBacklog; the kernel caps
	// it at net.core.somaxconn (a value beyond an int32 counts as the
	// largest int32). Negative is an error.
	Backlog int
	// ReusePort sets SO_REUSEPORT, so that several listeners (one per loop)
	// can bind the same address and the kernel spreads connections over them
	// (Linux balances by hash, and so does FreeBSD, where SO_REUSEPORT_LB
	// is set too; on macOS, NetBSD and OpenBSD the option only permits the
	// sharing, and the listener bound last takes every connection, so
	// one listener per loop serves on one loop). SO_REUSEADDR is always
	// set.
	//
	// The first of this process's listeners on an address checks that no
	// other socket listens there, as a listener without the option would:
	// a server started twice by mistake fails with EADDRINUSE instead of
	// taking a share of the first one's connections. The others join it.
	// The check narrows the window, it does not close it: another process
	// may bind between the check and the bind. It is made per address:
	// one program that listens on both 0.0.0.0:P and 127.0.0.1:P (or on
	// [::]:P and 0.0.0.0:P) with ReusePort finds the second refused, and
	// sets ReusePortAnyProcess on it.
	//
	// Security: once bound, the port is open to any socket that sets the
	// option too, not only this program's. Another process (on Linux, any
	// process of the same user; elsewhere possibly of any user) that skips
	// the check can bind the same address without an error and silently
	// receive a share of the connections meant for this one. Use it only
	// where every process that can bind the address is trusted.
	ReusePort bool
	// ReusePortAnyProcess, with ReusePort, skips the check above: the
	// listener joins whatever holds the address with SO_REUSEPORT, another
	// process's listeners included, as a new process taking over a port
	// from an old one that still serves needs to. It is this process's
	// listener all the same: later ReusePort listeners on the address join
	// it without the check.
	ReusePortAnyProcess bool
	// AcceptBatch bounds the connections accepted per readiness event, so a
	// flood of connections cannot starve the loop's other work. 0 means
	// DefaultAcceptBatch; negative is an error.
	AcceptBatch int
	// Conn is applied to every accepted connection.
	Conn ConnConfig
	// TLS, when set, makes the listener serve TLS with it (tls.go): each
	// accepted connection first runs its handshake on the loop, and the
	// accept callback gets it only once the handshake ended well; its
	// reads and writes are plaintext (see Conn.TLS). A handshake that
	// fails or times out closes the connection (Stats.TLSHandshakeErrors
	// counts it). Share one Config across loops and listeners so that
	// session tickets resume anywhere. Do not change it once passed.
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS handshake, from accept to its end: a
	// client that stalls is closed with ErrHandshakeTimeout. 0 means
	// DefaultHandshakeTimeout; negative means none.
	HandshakeTimeout time.Duration
	// OnHandshakeError, when set, learns of each TLS handshake that
	// failed (each one Stats.TLSHandshakeErrors counts): the peer's
	// address, and why (ErrHandshakeTimeout for a timeout; crypto/tls's
	// error, as errors.As finds it, for a rejected certificate or a
	// first record that is not TLS), as net/http logs "TLS handshake
	// error" through Server.ErrorLog. The connection is already closed
	// (or, answered by NotTLS, ending). On the loop: it must not block.
	// nil: failures are only counted.
	OnHandshakeError func(peer netip.AddrPort, err error)
	// NotTLS, when set, answers a client that does not speak TLS to a
	// TLS listener, as net/http answers plaintext HTTP with a 400: when
	// the handshake fails because the first record's header is not
	// TLS's (crypto/tls's RecordHeaderError), NotTLS gets those first 5
	// bytes and returns the reply, which is written as it is, in
	// plaintext, on the raw connection. The connection then ends
	// politely: FIN once the reply is flushed, what the client still
	// sends is read and dropped until its EOF or Conn.Linger (so that
	// the rest of its request does not reset the connection and
	// destroy the reply). The failure is still counted and reported to
	// OnHandshakeError; the accept callback never sees the connection.
	// On the loop: it must not block; the reply must be small (it goes
	// to anyone who connects) and is copied. nil, or an empty reply:
	// the connection closes with nothing written.
	NotTLS func(head [5]byte) []byte
}

func (c ListenConfig) withDefaults() (ListenConfig, error) {
	switch {
	case c.Backlog < 0:
		return c, fmt.Errorf("%w: tcp listen: negative Backlog %d", ErrInvalidArgument, c.Backlog)
	case c.AcceptBatch < 0:
		return c, fmt.Errorf("%w: tcp listen: negative AcceptBatch %d", ErrInvalidArgument, c.AcceptBatch)
	case c.ReusePortAnyProcess && !c.ReusePort:
		return c, fmt.Errorf("%w: tcp listen: ReusePortAnyProcess without ReusePort", ErrInvalidArgument)
	}
	if c.Backlog == 0 {
		c.Backlog = DefaultBacklog
	}
	c.Backlog = min(c.Backlog, math.MaxInt32) // as for the buffer sizes: no wrap to 0
	if c.AcceptBatch == 0 {
		c.AcceptBatch = DefaultAcceptBatch
	}
	var err error
	c.Conn, err = c.Conn.withDefaults()
	return c, err
}

// tcpLoop is the TCP state a loop shares among its sockets (Loop.tcp): the
// counters that Stats reports, the one read buffer, the free write chunks.
type tcpLoop struct {
	// Counters: written on the loop, read by Stats from any goroutine.
	listeners atomic.Int64
	open      atomic.Int64
	accepted  atomic.Uint64
	dialed    atomic.Uint64
	adopted   atomic.Uint64
	closed    atomic.Uint64
	dropped   atomic.Uint64
	bytesIn   atomic.Uint64
	bytesOut  atomic.Uint64
	queued    atomic.Int64
	tlsDone   atomic.Uint64 // TLS handshakes that ended well
	tlsFailed atomic.Uint64 // TLS handshakes that failed, timed out or were cut short

	// Owned by the loop.
	refs   int         // listeners and connections alive: the buffer is held while > 0
	buf    *[]byte     // the shared read buffer, from readBufs while refs > 0
	chunks [][]byte    // free write-queue chunks (chunkSize), at most maxFreeChunks
	pipes  []kpipe     // free kernel pipes for Pipe's splicing, at most maxFreePipes
	iov    sock.Iovecs // writev scratch (platforms that make the system call directly)
	drain  *drainJob   // Runtime.Shutdown's drain of every connection, once started
	// draining counts the open connections that are draining (Conn.drain):
	// what Runtime.Shutdown's drain waits for. A connection opened after
	// the drain began is not among them (see Runtime.Shutdown).
	draining int
	writes   uint64   // write system calls made (tests read it on the loop)
	tls      *tlsLoop // TLS scratch (tls.go), from the first TLS connection
}

// readBufs recycles read buffers between loops, and for a loop whose last
// socket closed and whose next one opens soon after.
var readBufs = sync.Pool{New: func() any { b := make([]byte, ReadBufferSize); return &b }}

// acquire notes one more socket on the loop. On the loop.
func (t *tcpLoop) acquire() {
	if t.buf == nil {
		t.buf = readBufs.Get().(*[]byte)
	}
	t.refs++
}

// release notes a socket gone. When it was the last one, the buffers go back
// after the current callback (a read callback that closed the last
// connection still holds the read buffer until it returns), unless a new
// socket took them meanwhile. On the loop.
func (t *tcpLoop) release(l *Loop) {
	l.checkOnLoop()
	t.refs--
	if t.refs == 0 {
		l.jobs.push(job{t: funcTask(t.free)})
	}
}

// free gives the buffers back if no socket uses them. A job on the loop.
func (t *tcpLoop) free() {
	if t.refs == 0 && t.buf != nil {
		readBufs.Put(t.buf)
		t.buf = nil
		t.chunks = nil
		t.tls = nil
		t.freePipes()
	}
}

// tcpStats adds l's TCP counters to s. Any goroutine.
func tcpStats(l *Loop, s *Stats) {
	t := &l.tcp
	s.TCPListeners = int(t.listeners.Load())
	s.TCPOpen = int(t.open.Load())
	s.TCPAccepted = t.accepted.Load()
	s.TCPDialed = t.dialed.Load()
	s.TCPAdopted = t.adopted.Load()
	s.TCPClosed = t.closed.Load()
	s.TCPDropped = t.dropped.Load()
	s.TCPBytesIn = t.bytesIn.Load()
	s.TCPBytesOut = t.bytesOut.Load()
	s.TCPWriteQueued = int(t.queued.Load())
	s.TLSHandshakes = t.tlsDone.Load()
	s.TLSHandshakeErrors = t.tlsFailed.Load()
}

// chunkSize is the capacity of the chunks small writes are copied into, so
// that many small writes queue as few writev segments.
const (
	chunkSize     = 16 << 10
	maxFreeChunks = 64
)

// chunk returns an empty write-queue chunk. On the loop.
func (t *tcpLoop) chunk() []byte {
	if n := len(t.chunks); n > 0 {
		c := t.chunks[n-1]
		t.chunks[n-1] = nil
		t.chunks = t.chunks[:n-1]
		return c
	}
	return make([]byte, 0, chunkSize)
}

// recycle keeps a written chunk for reuse. On the loop.
func (t *tcpLoop) recycle(b []byte) {
	if cap(b) == chunkSize && len(t.chunks) < maxFreeChunks && t.refs > 0 {
		t.chunks = append(t.chunks, b[:0])
	}
}

// runningHandle returns a Running handle of l, for the loop code that settles
// it later (a posted operation, a queued write).
func runningHandle(l *Loop) *Handle[struct{}] {
	h := &Handle[struct{}]{}
	h.init(l)
	h.state.Store(uint32(Running))
	return h
}

// errnoIs reports whether err is the errno e.
func errnoIs(err error, e unix.Errno) bool {
	en, ok := err.(unix.Errno)
	return ok && en == e
}
