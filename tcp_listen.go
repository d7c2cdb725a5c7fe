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

// acceptPause is how long a listener stops accepting when accept fails and
// nothing can be done about the pending connection: out of kernel memory,
// refused by a security policy, out of fds with no spare fd to shed it with
// (or the spare did not help), or a batch of errors that served nothing.
// The pending connection keeps the level-triggered socket readable, so
// without a pause the loop would spin on accept.
const acceptPause = 100 * time.Millisecond

// A Listener accepts TCP connections on a loop and hands each one, on the
// loop, to the callback given to Listen. It is the owner of its socket and of
// a spare fd (libuv's reserve-fd trick): when accept fails because the process
// is out of fds, the listener closes the spare, accepts the pending
// connection and closes it at once (Stats.TCPDropped counts it), then reopens
// the spare, so that a full fd table never makes the loop spin on a
// level-triggered listening socket. Without a spare, or if that accepts
// nothing, it stops accepting for 100 ms instead. Listen lists how every
// accept error is handled.
//
// Every method may be called from any goroutine.
type Listener struct {
	// closed is Closed(): a producer of the loop, tracked so that Stop
	// cancels it, and cancelling it closes the listener. First field: the
	// handle's core starts the allocation.
	closed Handle[struct{}]

	l      *Loop          // immutable
	tl     *tcpLoop       // immutable
	addr   netip.AddrPort // immutable: the bound address, with the port the kernel chose for 0
	cfg    ListenConfig   // immutable, defaults filled in
	onConn func(*Conn)    // on the loop; nil once closed (closeWith)
	// reuseHeld: the listener counts in reusePorts (listenReusePort), and
	// its close takes it out. Immutable once Listen returns.
	reuseHeld bool

	gone atomic.Bool // closed (or closing); any goroutine reads it

	// Owned by the loop.
	fd      int // -1 once closed
	spare   int // the reserve fd, -1 if none
	started bool
	inPoll  bool // fd is registered with the poller
	t       timer
	// noDelay is whether accepted sockets come with TCP_NODELAY from the
	// listener: checked once, on the first accepted socket, since a
	// Linux-compatible kernel need not copy it (gVisor does not).
	noDelay, noDelayChecked bool
	conns                   int       // connections it accepted that are still open
	drained                 *drainJob // Drain's, once called
}

// Listen binds addr ("host:port"; host an IP literal, "localhost" or empty for
// every IPv4 interface; port 0 picks a free one, see Addr) and returns a
// listener on l that calls onConn on the loop with each accepted connection.
// Any goroutine. The socket is bound and listening when Listen returns, so a
// bad address or a port in use is its error (wrapped, errors.Is finds the
// errno, e.g. unix.EADDRINUSE); accepting starts on the loop right after. nil
// l or onConn, a stopping loop and bad ListenConfig values are errors too.
//
// onConn runs on the loop and usually sets the connection's callbacks
// (OnRead, ...); a connection on which it sets none is open but not read. A
// panic in onConn is reported like a panic in a posted callback and closes
// that connection.
//
// Accept errors never reach onConn; the listener handles them by whose
// failure they are:
//   - One pending connection's: ECONNABORTED, ECONNRESET, ETIMEDOUT, and the
//     protocol errors Linux's accept(2) passes on for retry (ENETDOWN,
//     EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP,
//     ENETUNREACH, ESOCKTNOSUPPORT, EPROTONOSUPPORT). That connection is
//     lost, Stats.TCPDropped counts it, and accepting goes on at once; a
//     whole AcceptBatch of them that serves nothing pauses accepting as
//     below, in case they leave the connection queued.
//   - The process's or system's resources, or policy: out of fds (EMFILE,
//     ENFILE), the listener sheds the pending connection with its spare fd
//     (TCPDropped counts it) and goes on. Out of kernel memory (ENOBUFS,
//     ENOMEM), refused by a security policy (EPERM, EACCES: seccomp or an
//     LSM, checked before the connection leaves the queue), or out of fds
//     when shedding is impossible or takes nothing off the queue, it stops
//     accepting for 100 ms, then tries again; connections wait in the
//     kernel's backlog meanwhile. The loop never spins on a socket it cannot
//     accept from.
//   - The listening socket's: EBADF, EINVAL, ENOTSOCK, EFAULT, or any errno
//     not listed above. The listener closes, and Closed fails with the error
//     (errors.Is finds the errno). Connections accepted before stay open.
func Listen(l *Loop, addr string, cfg ListenConfig, onConn func(c *Conn)) (*Listener, error) {
	if err := checkProducer(l, onConn == nil); err != nil {
		return nil, err
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ap, _, err := splitAddr(addr, true)
	if err != nil {
		return nil, fmt.Errorf("aio: listen tcp %q: %w", addr, err)
	}
	listen := listenSocket
	if cfg.ReusePort {
		listen = listenReusePort // counted in reusePorts (ReusePortAnyProcess skips only the check)
	}
	fd, bound, err := listen(ap, cfg)
	if err != nil {
		return nil, fmt.Errorf("aio: listen tcp %s: %w", ap, err)
	}
	ln := newListener(l, fd, bound, cfg, onConn)
	ln.reuseHeld = cfg.ReusePort
	ln.spare = openSpare()
	l.runInline(ln.start)
	return ln, nil
}

// newListener makes the Listener that will own the listening socket fd,
// bound to addr, without its spare fd; start registers it with the loop.
// Any goroutine.
func newListener(l *Loop, fd int, addr netip.AddrPort, cfg ListenConfig, onConn func(*Conn)) *Listener {
	ln := &Listener{l: l, tl: &l.tcp, addr: addr, cfg: cfg, onConn: onConn, fd: fd, spare: -1}
	ln.closed.init(l)
	ln.closed.state.Store(uint32(Running))
	ln.closed.prod = ln
	ln.t.owner = ln
	ln.t.index = -1
	return ln
}

// listenSocket opens, binds and listens; it returns the fd and the bound
// address.
func listenSocket(ap netip.AddrPort, cfg ListenConfig) (int, netip.AddrPort, error) {
	sa, family := sock.Sockaddr(ap)
	fd, err := sock.Socket(family)
	if err != nil {
		return -1, ap, fmt.Errorf("socket: %w", err)
	}
	fail := func(what string, err error) (int, netip.AddrPort, error) {
		unix.Close(fd)
		return -1, ap, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt SO_REUSEADDR", err)
	}
	if cfg.ReusePort {
		if err := sock.SetReusePort(fd); err != nil {
			return fail("setsockopt SO_REUSEPORT", err)
		}
	}
	if err := setBufferSizes(fd, cfg.Conn); err != nil {
		return fail("options", err)
	}
	if sock.AcceptInheritsNoDelay && !cfg.Conn.Nagle {
		if err := sock.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return fail("setsockopt TCP_NODELAY", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, cfg.Backlog); err != nil {
		return fail("listen", err)
	}
	bound, err := sock.LocalAddr(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	return fd, bound, nil
}

// openSpare opens the reserve fd, or returns -1.
func openSpare() int {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// start registers the listener with the loop. On the loop.
func (ln *Listener) start() {
	ln.l.checkOnLoop()
	if ln.gone.Load() {
		return // closed before it started
	}
	l := ln.l
	if l.state.Load() != stateRunning {
		ln.closeWith(ErrCancelled)
		return
	}
	ln.started = true
	ln.tl.acquire()
	ln.tl.listeners.Add(1)
	setFD(l, ln.fd, ln)
	l.adoptProducer(&ln.closed.core)
	ln.watch()
}

// watch registers the socket with the poller, closing the listener if that
// fails. On the loop.
func (ln *Listener) watch() {
	ln.l.checkOnLoop()
	if err := ln.l.poller.Add(ln.fd, poll.Readable); err != nil {
		ln.closeWith(fmt.Errorf("aio: listen tcp %s: %w", ln.addr, err))
		return
	}
	ln.inPoll = true
}

// Addr returns the address the listener is bound to, with the port the
// kernel chose if Listen asked for port 0. Any goroutine.
func (ln *Listener) Addr() netip.AddrPort { return ln.addr }

// Loop returns the listener's loop.
func (ln *Listener) Loop() *Loop { return ln.l }

// Close stops accepting and closes the socket; connections already
// delivered stay open, and those still in their TLS handshake, which were
// never delivered, close (the callback gets no connection after Close):
// each is a handshake that failed with ErrConnClosed, counted in
// Stats.TLSHandshakeErrors and reported to OnHandshakeError, as one a
// Drain ends. It returns a handle that completes once the socket is
// closed: at once on the loop, after a posted job elsewhere. Idempotent;
// any goroutine.
func (ln *Listener) Close() *Handle[struct{}] {
	return ln.l.runInlineHandle(func() error { ln.closeWith(nil); return nil })
}

// Closed returns a handle that ends when the listener is closed: completed
// after Close, failed with the error if accepting failed for good, cancelled
// by Loop.Stop. Cancelling it closes the listener. Any goroutine.
func (ln *Listener) Closed() *Handle[struct{}] { return &ln.closed }

// onIO accepts up to AcceptBatch connections (failed attempts count toward
// the batch, so a run of per-connection errors cannot hold the loop). An
// error ends the batch only if it leaves nothing to accept now: the queue is
// empty, accepting is paused, or the listener closed; acceptActionOf and
// Listen's doc say which error does what. On the loop.
func (ln *Listener) onIO(poll.Events) {
	ln.l.checkOnLoop()
	served := false
	for i := 0; i < ln.cfg.AcceptBatch && ln.fd >= 0; i++ {
		fd, peer, err := acceptFn(ln.fd)
		if err == nil {
			served = true
			ln.serve(fd, peer)
			continue
		}
		switch acceptActionOf(err) {
		case acceptDrained:
			return
		case acceptRetry: // again, within the batch
		case acceptDrop:
			ln.tl.dropped.Add(1)
			if i == ln.cfg.AcceptBatch-1 && !served {
				// A whole batch failed and served nothing: the errors may
				// not be taking connections off the queue, and the socket
				// would stay readable for ever. Pause instead of spinning.
				ln.pause()
				return
			}
		case acceptShed:
			ln.shed()
			return
		case acceptWait:
			ln.pause()
			return
		default:
			ln.acceptFailed(err)
			return
		}
	}
}

// acceptFailed closes the listener for an accept error that means its socket
// is broken. On the loop.
func (ln *Listener) acceptFailed(err error) {
	ln.l.checkOnLoop()
	ln.closeWith(fmt.Errorf("aio: tcp accept on %s: %w", ln.addr, err))
}

// serve turns an accepted fd into a Conn and hands it to the callback.
func (ln *Listener) serve(fd int, peer netip.AddrPort) {
	if err := setConnOptions(fd, ln.cfg.Conn, ln.inheritsNoDelay(fd), false); err != nil {
		// The peer is most likely gone already (some systems refuse options
		// on a reset socket): nothing to hand over.
		unix.Close(fd)
		ln.tl.dropped.Add(1)
		return
	}
	c := newConn(ln.l, ln.tl, fd, ln.cfg.Conn, connOpen)
	c.raddr = peer
	c.laddr = ln.addr
	c.ln = ln
	ln.conns++
	if ln.addr.Addr().IsUnspecified() {
		c.laddr, _ = sock.LocalAddr(fd)
	}
	ln.tl.accepted.Add(1)
	ln.tl.open.Add(1)
	c.startTimeouts()
	if ln.cfg.TLS != nil {
		ln.serveTLS(c) // the callback gets it after the handshake (tls_listen.go)
		return
	}
	ln.deliver(c)
}

// inheritsNoDelay reports whether fd, accepted, has TCP_NODELAY from the
// listener (see sock.AcceptInheritsNoDelay), reading it back from the first
// accepted socket only.
func (ln *Listener) inheritsNoDelay(fd int) bool {
	if !sock.AcceptInheritsNoDelay || ln.cfg.Conn.Nagle {
		return false
	}
	if !ln.noDelayChecked {
		ln.noDelayChecked = true
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		ln.noDelay = err == nil && v != 0
	}
	return ln.noDelay
}

// deliver runs the accept callback; a panic there closes the connection.
func (ln *Listener) deliver(c *Conn) {
	defer c.guard()
	fn := ln.onConn
	if fn == nil { // closed meanwhile: nobody takes it
		c.closeWith(nil)
		return
	}
	fn(c)
}

// shed handles accept failing for want of fds: the spare fd is given up to
// accept and close what is pending, then taken back. Accepting pauses for
// acceptPause when that does not help: without a spare, if it cannot be
// reopened, or if shedding took nothing off the queue (the error persists:
// another thread took the freed fd, or the system table is full), since the
// pending connection keeps the socket readable. On the loop.
func (ln *Listener) shed() {
	ln.l.checkOnLoop()
	if ln.spare >= 0 {
		unix.Close(ln.spare)
		ln.spare = -1
		progress, err := ln.dropPending()
		if err != nil {
			ln.acceptFailed(err) // the spare is closed already: nothing to reopen
			return
		}
		if ln.spare = openSpare(); ln.spare >= 0 && progress {
			return
		}
	}
	ln.pause()
}

// dropPending accepts and closes up to AcceptBatch pending connections with
// the fd the spare freed. It reports progress if it took a connection off
// the queue (accepted, or failed by the kernel) or found the queue empty:
// then the socket is not readable for the same connection again. It returns
// the error if the listening socket turned out broken. On the loop.
func (ln *Listener) dropPending() (progress bool, broken error) {
	ln.l.checkOnLoop()
	for i := 0; i < ln.cfg.AcceptBatch; i++ {
		fd, _, err := acceptFn(ln.fd)
		if err == nil {
			unix.Close(fd)
			ln.tl.dropped.Add(1)
			progress = true
			continue
		}
		switch acceptActionOf(err) {
		case acceptDrained:
			return true, nil
		case acceptRetry: // again, within the batch
		case acceptDrop:
			ln.tl.dropped.Add(1)
			progress = true
		case acceptFail:
			return progress, err
		default: // still out of fds, or of memory
			return progress, nil
		}
	}
	return progress, nil
}

// pause stops accepting for acceptPause: the socket leaves the poller, so
// its readiness no longer wakes the loop, and fire puts it back. On the loop.
func (ln *Listener) pause() {
	ln.l.checkOnLoop()
	if ln.inPoll {
		_ = ln.l.poller.Delete(ln.fd)
		ln.inPoll = false
	}
	if ln.t.index < 0 {
		ln.t.when = ln.l.clock() + acceptPause
		ln.l.addTimer(&ln.t)
	}
}

// fire ends a pause in accepting. On the loop.
func (ln *Listener) fire() {
	ln.l.checkOnLoop()
	if ln.fd < 0 {
		return
	}
	if ln.spare < 0 {
		ln.spare = openSpare()
	}
	ln.watch()
}

func (ln *Listener) base() *core { return &ln.closed.core }

// stop is the producer side of Closed: cancelling it (Loop.Stop does)
// closes the listener.
func (ln *Listener) stop() { ln.closeWith(ErrCancelled) }

// closeFD is Stop's last resort for an fd still registered at teardown.
func (ln *Listener) closeFD() {
	ln.closeWith(ErrCancelled)
	ln.l.drain()
}

// closeWith closes the listener once: err nil completes Closed, ErrCancelled
// cancels it, anything else fails it. On the loop.
func (ln *Listener) closeWith(err error) {
	ln.l.checkOnLoop()
	if ln.fd < 0 {
		return
	}
	ln.gone.Store(true)
	l := ln.l
	l.removeTimer(&ln.t)
	clearFD(l, ln.fd, ln, ln.inPoll)
	ln.inPoll = false
	unix.Close(ln.fd)
	ln.fd = -1
	if ln.reuseHeld {
		releaseReusePort(ln.addr) // after the close: a listener joining meanwhile binds beside it
	}
	if ln.spare >= 0 {
		unix.Close(ln.spare)
		ln.spare = -1
	}
	if ln.started {
		ln.tl.listeners.Add(-1)
		ln.tl.release(l)
	}
	if ln.cfg.TLS != nil {
		ln.closeHandshakes()
	}
	// It delivers nothing more: what the callback captured goes, though
	// the listener is kept (by the program, and by every connection it
	// accepted, c.ln).
	ln.onConn = nil
	settleClosed(&ln.closed, err)
}

// closeHandshakes closes the connections ln accepted that are still in
// their TLS handshake: never delivered, they are the listener's, and a
// closed listener delivers nothing more (a server shutting down would
// otherwise hold them, unseen, until they finish or time out). On the
// loop.
func (ln *Listener) closeHandshakes() {
	ln.l.eachIO(func(h ioHandler) {
		if c, ok := h.(*Conn); ok && c.ln == ln && c.state == connOpen && c.tls != nil && !c.tls.done {
			c.closeWith(nil)
		}
	})
}

// settleClosed ends a Closed handle: completed for nil, cancelled for
// ErrCancelled, failed otherwise.
func settleClosed(h *Handle[struct{}], err error) {
	switch {
	case err == nil:
		h.settle(struct{}{}, nil)
	case errors.Is(err, ErrCancelled):
		h.cancel()
	default:
		h.settle(struct{}{}, err)
	}
}
