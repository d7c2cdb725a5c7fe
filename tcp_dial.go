package aio

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/valkyria/aio/internal/poll"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// dialNode is the handle of Dial.
type dialNode struct {
	Handle[*Conn]
	r *dialResolve // the name resolution while it runs; owned by the loop
	c *Conn        // the connection while it connects; owned by the loop
	// ownPort: Dialer.LocalAddr named the local port, so a connection to
	// itself is the program's doing (see connected). Owned by the loop.
	ownPort bool

	// conn is the connection's memory, allocated with the handle: one
	// allocation per Dial instead of two. Set up by connect.
	conn Conn
}

// Dial connects to addr ("host:port") from loop l and returns a handle that
// completes with the connection once it is established. The connect is
// non-blocking: the socket waits in the poller for writability and SO_ERROR
// decides. A host that is not an IP literal or "localhost" is resolved first,
// off the loop, on the loop's Work pool (DNS may block). The handle fails with
// the wrapped errno (errors.Is(err, unix.ECONNREFUSED) for a port nobody
// listens on, and for a socket the kernel connected to itself, which
// happens there now and then and which package net redials), with a
// resolution error, or for a bad address or config;
// cancelling it (or Loop.Stop) aborts the connect and closes the socket. A
// deadline is Within(Dial(...), d), or a Dialer's DialContext. Any goroutine.
//
// The connection reads nothing until OnRead is set: set the callbacks in a
// continuation of the handle (Then on the same loop runs before the loop
// polls again).
//
// The connection is the program's once a dependent takes it (a Then's
// function runs with it, Await returns it); if every dependent of the handle
// declines it instead (all cancelled or withdrawn as it completed, a Race
// it lost), the connection is closed with ErrCancelled, as a pending dial
// nobody wants is cancelled (see "Cancellation is withdrawn interest" in the
// package documentation).
func Dial(l *Loop, addr string, cfg ConnConfig) *Handle[*Conn] {
	_, h := dial(l, addr, cfg, netip.AddrPort{})
	return h
}

// A Dialer holds the options of a connection to dial, as net.Dialer does.
// The zero value dials as Dial does. A Dialer may be used by several
// goroutines at once; its methods do not change it.
type Dialer struct {
	// LocalAddr, when set, is the local address the socket is bound to
	// before it connects, as net.Dialer's: a source IP, a source port, or
	// both. An unspecified IP (0.0.0.0, ::) or none
	// (netip.AddrPortFrom(netip.Addr{}, port)) binds only the port, on every
	// address of the remote's family; port 0 lets the kernel choose it. A
	// specific IP of the other family than the remote address fails the
	// dial. An IPv4-mapped IPv6 address counts as the IPv4 one; a zone
	// must be numeric (an interface index). The zero AddrPort binds
	// nothing: the kernel chooses both when it connects.
	LocalAddr netip.AddrPort
	// Conn is applied to the connection.
	Conn ConnConfig
	// TLS, when set, makes the dial a TLS client's (tls_dial.go): the
	// handle completes once the handshake ended well, and the
	// connection's reads and writes are plaintext (see Conn.TLS). Server
	// name (from the address's host when ServerName is empty), ALPN
	// (NextProtos) and verification are the Config's, as with
	// crypto/tls. Renegotiation stays off whatever Renegotiation says.
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS dial, the connect and the handshake
	// together: the handle fails with an error that names the address
	// and for which errors.Is(err, ErrHandshakeTimeout) and
	// errors.Is(err, ErrTimeout) hold. 0 means DefaultHandshakeTimeout;
	// negative means none.
	HandshakeTimeout time.Duration
}

// Dial is Dial with d's options. A nil d is the zero Dialer. Any goroutine.
func (d *Dialer) Dial(l *Loop, addr string) *Handle[*Conn] {
	var o Dialer
	if d != nil {
		o = *d
	}
	_, h := dial(l, addr, o.Conn, o.LocalAddr)
	if o.TLS != nil {
		return dialTLS(nil, l, addr, h, &o)
	}
	return h
}

// DialContext is Dial with d's options and a context: when ctx is done
// before the connection is established (cancelled, or its deadline passed),
// the dial is aborted as a cancel would (the name resolution withdrawn, the
// socket closed) and the handle fails with an error for which
// errors.Is(err, ctx.Err()) holds, and errors.Is(err, context.Cause(ctx))
// too. A ctx done already fails it at once. Once the handle has ended, ctx
// no longer matters: the connection it delivered is not closed with ctx
// (as with net.Dialer), and nothing is left registered on ctx. A nil d is
// the zero Dialer. Any goroutine.
//
// To block for it, Wait(context.Background()): the handle ends with ctx
// already. Wait(ctx) may return ctx's error for a connection that was
// established as ctx ended, and that connection then stays open with no
// owner (see Handle.Wait).
func (d *Dialer) DialContext(ctx context.Context, l *Loop, addr string) *Handle[*Conn] {
	var o Dialer
	if d != nil {
		o = *d
	}
	switch {
	case ctx == nil:
		return Fail[*Conn](l, fmt.Errorf("%w: dial tcp %q: nil context", ErrInvalidArgument, addr))
	case l != nil && ctx.Err() != nil:
		return Fail[*Conn](l, dialCtxError(ctx, addr))
	}
	n, h := dial(l, addr, o.Conn, o.LocalAddr)
	if n != nil && ctx.Done() != nil {
		// Tied as Bind ties a handle, but the dial fails with ctx's error
		// instead of being cancelled; the tie is undone when the dial ends.
		h.watch(stopAfter(context.AfterFunc(ctx, func() {
			err := dialCtxError(ctx, addr)
			l.runInline(func() { n.abort(err) })
		})))
	}
	if o.TLS != nil && n != nil {
		return dialTLS(ctx, l, addr, h, &o)
	}
	return h
}

// dialCtxError is the error of a dial whose context ended before the
// connection was established (ctxError, naming the dial).
func dialCtxError(ctx context.Context, addr string) error {
	return fmt.Errorf("aio: dial tcp %s: %w", addr, ctxError(ctx))
}

// ctxError is the error of an ended ctx: its error, with its cause when
// that says more.
func ctxError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// dial starts a dial; it returns the dial's node too, nil when the handle
// failed up front.
func dial(l *Loop, addr string, cfg ConnConfig, local netip.AddrPort) (*dialNode, *Handle[*Conn]) {
	if err := checkProducer(l, false); err != nil {
		return nil, Fail[*Conn](l, err)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, Fail[*Conn](l, err)
	}
	ap, name, err := splitAddr(addr, false)
	if err != nil {
		return nil, Fail[*Conn](l, fmt.Errorf("aio: dial tcp %q: %w", addr, err))
	}
	// The local address as splitAddr takes a remote one: unmapped (an
	// IPv4-mapped IPv6 address binds as the IPv4 one, as package net
	// binds it), and with a numeric zone only, rather than scope 0.
	if err := checkZone(local.Addr()); err != nil {
		return nil, Fail[*Conn](l, fmt.Errorf("aio: dial tcp %q: local address %s: %w", addr, local, err))
	}
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	n := &dialNode{}
	n.init(l)
	n.prod = n
	n.state.Store(uint32(Running))
	switch {
	case name != "":
		port := ap.Port()
		res := Work(l, func(ctx context.Context) (netip.AddrPort, error) {
			return resolve(ctx, name, port)
		})
		n.r = &dialResolve{res: res, cfg: cfg, local: local, addr: addr}
		res.register(n)
	case l.OnLoop(): // runInline by hand: the closure and the copy of cfg only when posted
		n.connect(ap, &cfg, local)
	default:
		cfg := cfg // only this copy goes to the heap, with the closure
		l.runLater(func() { n.connect(ap, &cfg, local) })
	}
	return n, &n.Handle
}

// dialResolve is what a Dial of a host name keeps while the name resolves:
// what connect needs then. Separate, so that a Dial of an address (most of
// them) carries none of it: 64 bytes less to allocate and touch.
type dialResolve struct {
	res   *Handle[netip.AddrPort]
	cfg   ConnConfig     // immutable
	local netip.AddrPort // Dialer.LocalAddr; immutable
	addr  string         // as given, for errors; immutable
}

// lookupNetIP is the name lookup of Dial: the default resolver's, replaced
// by tests that need a name to resolve the same way on every machine.
var lookupNetIP = net.DefaultResolver.LookupNetIP

// resolve looks name up, preferring an IPv4 address. Off the loop.
func resolve(ctx context.Context, name string, port uint16) (netip.AddrPort, error) {
	ips, err := lookupNetIP(ctx, "ip", name)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("no address for %q", name)
	}
	best := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			best = ip
			break
		}
	}
	return netip.AddrPortFrom(best.Unmap(), port), nil
}

// inputDone runs on the loop when the name resolution finished.
func (n *dialNode) inputDone() {
	n.loop.checkOnLoop()
	r := n.r
	n.r = nil
	if r == nil || n.ended() {
		return
	}
	switch res := r.res; res.state.Load() {
	case uint32(Completed):
		n.connect(res.val, &r.cfg, r.local)
	case uint32(Failed):
		n.settle(nil, fmt.Errorf("aio: dial tcp %q: %w", r.addr, res.err))
	default:
		n.cancel()
	}
}

// connect opens the socket, binds it to local if that is set, and starts
// connecting. On the loop.
func (n *dialNode) connect(ap netip.AddrPort, cfg *ConnConfig, local netip.AddrPort) {
	n.loop.checkOnLoop()
	if n.ended() {
		return
	}
	l := n.loop
	if l.state.Load() != stateRunning {
		n.cancel()
		return
	}
	fail := func(what string, err error) {
		n.settle(nil, fmt.Errorf("aio: dial tcp %s: %s: %w", ap, what, err))
	}
	fd, err := sock.Socket(sock.Family(ap))
	if err != nil {
		fail("socket", err)
		return
	}
	if err := setConnOptions(fd, *cfg, true, true); err != nil {
		unix.Close(fd)
		fail("options", err)
		return
	}
	n.ownPort = local.Port() != 0
	if dialBound != nil {
		dialBound(fd)
	}
	if local.IsValid() || local.Port() != 0 {
		if err := bindLocal(fd, local, ap); err != nil {
			unix.Close(fd)
			fail("bind", err)
			return
		}
	}
	c := &n.conn
	c.init(l, &l.tcp, fd, *cfg, connConnecting)
	if !cfg.Nagle {
		c.noDelayDue = noDelayAfterFirst // see noDelayAfterFirst
	}
	c.raddr = ap
	c.dial = n
	n.c = c
	err = sock.Connect(fd, ap)
	if errnoIs(err, unix.EINPROGRESS) && loopbackRetry && ap.Addr().IsLoopback() {
		// Over loopback the kernel usually completes the handshake inside
		// the first connect; a second one then returns 0 (or EISCONN),
		// which saves waiting for writability (an epoll_ctl, a poll round
		// and a getsockopt). Elsewhere it would only cost an EALREADY.
		switch err2 := sock.ConnectAgain(fd, ap); {
		case err2 == nil, errnoIs(err2, unix.EISCONN):
			err = nil
		case !errnoIs(err2, unix.EALREADY) && !errnoIs(err2, unix.EINPROGRESS):
			err = err2 // it failed already (refused): SO_ERROR is consumed
		}
	}
	switch {
	case err == nil:
		c.connected()
	case errnoIs(err, unix.EINPROGRESS), errnoIs(err, unix.EINTR):
		if err := l.poller.Add(fd, poll.Writable); err != nil {
			c.closeWith(fmt.Errorf("aio: dial tcp %s: poll: %w", ap, err))
			return
		}
		c.ev = poll.Writable
	default:
		c.closeWith(fmt.Errorf("aio: dial tcp %s: connect: %w", ap, err))
	}
}

// selfConnected reports whether the socket's peer is itself, once the
// ports matched. The dialed address is not always the peer's: an
// unspecified one (0.0.0.0, ::) connects to the local host, and a zone
// the kernel does not keep reads back without it; getpeername tells, as
// package net's check reads it. On the loop.
func (c *Conn) selfConnected() bool {
	if c.laddr == c.raddr {
		return true
	}
	peer, err := sock.PeerAddr(c.fd)
	return err == nil && peer == c.laddr
}

// dialBound, when set, is called with each dial's socket before it is
// bound or connects: tests bind it as the kernel would choose a port. Set
// only while no dial runs.
var dialBound func(fd int)

// loopbackRetry enables the second connect over loopback; tests turn it off
// to exercise the wait for writability. Read on loops, written only while
// no dial runs.
var loopbackRetry = true

// bindLocal binds fd, about to connect to remote, to local (see
// Dialer.LocalAddr).
func bindLocal(fd int, local, remote netip.AddrPort) error {
	ip := local.Addr()
	switch {
	case !ip.IsValid() || ip.IsUnspecified():
		ip = netip.IPv4Unspecified()
		if !remote.Addr().Is4() {
			ip = netip.IPv6Unspecified()
		}
	case ip.Is4() != remote.Addr().Is4():
		return fmt.Errorf("local address %s and remote %s are of different families", local, remote)
	}
	sa, _ := sock.Sockaddr(netip.AddrPortFrom(ip, local.Port()))
	return unix.Bind(fd, sa)
}

// stop aborts the dial when its handle is cancelled.
func (n *dialNode) stop() { n.release(ErrCancelled) }

// abort fails the dial with err (its context ended), unless it ended
// already. On the loop.
func (n *dialNode) abort(err error) {
	n.loop.checkOnLoop()
	if n.ended() {
		return // the connection, if any, is the caller's now
	}
	n.release(err)
	n.settle(nil, err)
}

// release withdraws the resolution and closes the socket, with err for
// what they end with. On the loop.
func (n *dialNode) release(err error) {
	if r := n.r; r != nil {
		n.r = nil
		r.res.withdraw()
	}
	if c := n.c; c != nil {
		n.c = nil
		c.closeWith(err)
	}
}

// finishConnect runs when a connecting socket becomes writable (or reports
// an error): SO_ERROR says how the connect ended. On the loop.
func (c *Conn) finishConnect() {
	c.l.checkOnLoop()
	e, err := sock.SocketError(c.fd)
	if err == nil && e != 0 {
		err = unix.Errno(e)
	}
	switch {
	case err == nil:
		c.connected()
	case errnoIs(err, unix.EINPROGRESS), errnoIs(err, unix.EALREADY), errnoIs(err, unix.EINTR):
		// not done yet
	default:
		c.closeWith(fmt.Errorf("aio: dial tcp %s: connect: %w", c.raddr, err))
	}
}

// connected turns a connecting socket into an open connection and completes
// the Dial handle. On the loop.
func (c *Conn) connected() {
	c.l.checkOnLoop()
	c.laddr, _ = sock.LocalAddr(c.fd)
	if c.raddr.Addr().IsUnspecified() {
		// The kernel took it for the local host: name the peer it has,
		// as package net's RemoteAddr does.
		if peer, err := sock.PeerAddr(c.fd); err == nil {
			c.raddr = peer
		}
	}
	if c.laddr.Port() == c.raddr.Port() && !c.dial.ownPort && c.selfConnected() {
		// The kernel chose the remote's own port as the local one, and
		// the SYN met itself (a simultaneous open): a connection that
		// echoes its own writes and holds the port the real server
		// wants. It happens only when nothing is bound to that port, so
		// it is the refusal a redial would get (package net redials).
		c.closeWith(fmt.Errorf("aio: dial tcp %s: connect: %w (the socket connected to itself: nothing listens there)", c.raddr, unix.ECONNREFUSED))
		return
	}
	c.state = connOpen
	c.tl.dialed.Add(1)
	c.tl.open.Add(1)
	c.startTimeouts()
	n := c.dial
	c.dial = nil
	n.c = nil
	if !n.settle(c, nil) { // cancelled meanwhile: nobody will get the connection
		c.closeWith(ErrCancelled)
		return
	}
	// Closed if every dependent of the handle declines it (see
	// releaseUnwanted): set before the dependents are told, by a job.
	n.rareFields().relConn = c
	// After settle: the continuations run first (they may set OnRead), then
	// one interest update replaces the connect's Writable.
	c.update()
}
