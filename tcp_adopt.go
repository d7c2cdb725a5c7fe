package aio

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"syscall"

	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// Adopting a socket made elsewhere, as libuv's uv_tcp_open: a connection
// or a listening socket inherited from a parent process or a service
// manager (systemd socket activation, inetd), or made with package net.
// The socket is checked first (a TCP socket, connected or listening as
// asked), so that a wrong fd is refused with an error naming what it is,
// before anything about it changes. From then on the Conn or Listener owns
// it as it owns the sockets it accepts or dials: one owner, one release
// path (its close), counted in Stats, closed by Loop.Stop.
//
// Hand each fd to one loop. The checks refuse an fd the loop owns already,
// but not one another loop owns (each loop keeps its fds to itself): that
// fd would have two owners, each closing it, the second close hitting
// whatever file took its number meanwhile. The From forms adopt a
// duplicate, which is never that.
//
// Off the loop, adoption waits for the loop to take the socket over, and on
// another loop's goroutine that loop waits too: two loops adopting onto each
// other at once wait for each other for ever. A loop hands a socket to
// another with Post, adopting on the receiving loop.

// AdoptConn makes a Conn of fd, a connected TCP socket (IPv4 or IPv6) made
// elsewhere, as if l had accepted it: it is made non-blocking and
// close-on-exec, cfg's options are set on it (the buffer sizes, set after
// the handshake, do not scale the receive window as they do before it),
// and the Conn is open, reading nothing until OnRead is set. Stats count
// it in TCPAdopted and TCPOpen, and its close as any other.
//
// On success the Conn owns fd: closing the Conn closes it, and the caller
// must neither close nor use it. On error fd is not closed and still the
// caller's; the checks come first and change nothing: a negative fd, one
// that is not a socket, not a stream, not of the IPv4 or IPv6 family, not
// TCP, listening (see AdoptListener) or not connected are refused, as is
// an fd the loop already owns. nil l, a stopping loop (ErrStopped) and bad
// ConnConfig values are errors too. The socket options come after the
// checks: one the kernel refuses (rare: a buffer size, keep-alive) fails
// the adoption with the options before it already set. AdoptTLSConn adopts
// one that speaks TLS.
//
// Any goroutine. Off the loop it waits until the loop has taken the
// socket over (so that the error is known when it returns), blocking the
// caller's loop if it runs on another one (see above).
func AdoptConn(l *Loop, fd int, cfg ConnConfig) (*Conn, error) {
	if err := checkProducer(l, false); err != nil {
		return nil, err
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	laddr, raddr, err := checkAdoptable(fd, false)
	if err != nil {
		return nil, fmt.Errorf("aio: adopt tcp fd %d: %w", fd, err)
	}
	var c *Conn
	err = runWait(l, func() error {
		if err := takeOver(l, fd, func() error { return setConnOptions(fd, cfg, false, true) }); err != nil {
			return err
		}
		c = newConn(l, &l.tcp, fd, cfg, connOpen)
		c.laddr, c.raddr = laddr, raddr
		l.tcp.adopted.Add(1)
		l.tcp.open.Add(1)
		c.startTimeouts()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("aio: adopt tcp fd %d: %w", fd, err)
	}
	return c, nil
}

// AdoptListener makes a Listener of fd, a listening TCP socket (IPv4 or
// IPv6) made elsewhere, which calls onConn on the loop with each
// connection it accepts, as one made by Listen does. The socket is made
// non-blocking and close-on-exec; it is bound and listening already, so
// cfg's Backlog and ReusePort do not apply (a socket that has SO_REUSEPORT
// counts as this process's for a ReusePort Listen on its address, which
// joins it; its AcceptBatch and Conn do;
// the Conn buffer sizes are set on the listening socket, which the
// connections accepted from then on inherit). Its TLS and
// HandshakeTimeout do: with TLS set the listener serves TLS as one made by
// Listen does (an adopted listening socket only ever accepts, so it is the
// server's side), and onConn gets each connection once its handshake
// ended well. For a connection, see AdoptTLSConn.
//
// Ownership and the checks are AdoptConn's: on success the Listener owns
// fd (Close closes it); on error fd is not closed and still the caller's,
// and a socket that is not a listening TCP socket is refused before
// anything about it changes. nil l or onConn, a stopping loop and bad
// ListenConfig values are errors too. Any goroutine; off the loop it waits
// until the loop has taken the socket over.
func AdoptListener(l *Loop, fd int, cfg ListenConfig, onConn func(c *Conn)) (*Listener, error) {
	if err := checkProducer(l, onConn == nil); err != nil {
		return nil, err
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	addr, _, err := checkAdoptable(fd, true)
	if err != nil {
		return nil, fmt.Errorf("aio: adopt tcp listener fd %d: %w", fd, err)
	}
	var ln *Listener
	err = runWait(l, func() error {
		if err := takeOver(l, fd, func() error { return setBufferSizes(fd, cfg.Conn) }); err != nil {
			return err
		}
		ln = newListener(l, fd, addr, cfg, onConn) // its Closed handle counts from here
		// A socket that shares its port (SO_REUSEPORT) is one of this
		// process's: a ReusePort Listen on its address joins it.
		if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT); err == nil && v != 0 {
			holdReusePort(addr)
			ln.reuseHeld = true
		}
		ln.spare = openSpare()
		ln.start()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("aio: adopt tcp listener fd %d: %w", fd, err)
	}
	return ln, nil
}

// AdoptConnFrom is AdoptConn of a duplicate of from's socket: a
// *net.TCPConn, or an *os.File or anything else whose SyscallConn gives a
// connected TCP socket. The duplicate is aio's and closes with the Conn;
// from stays the caller's, who must close it (the connection lives on
// while either is open, and closing from sends nothing to the peer) and
// must not read or write it any more: the bytes would go to one or the
// other at random. The socket is shared: it is made non-blocking for both
// (package net's are already), and the options cfg sets apply to from too.
// On error nothing is left open. Any goroutine.
func AdoptConnFrom(l *Loop, from syscall.Conn, cfg ConnConfig) (*Conn, error) {
	fd, err := dupSocket(from)
	if err != nil {
		return nil, fmt.Errorf("aio: adopt tcp: %w", err)
	}
	c, err := AdoptConn(l, fd, cfg)
	if err != nil {
		_ = sock.Close(fd)
	}
	return c, err
}

// AdoptListenerFrom is AdoptListener of a duplicate of from's socket: a
// *net.TCPListener, or an *os.File or anything else whose SyscallConn gives
// a listening TCP socket. Ownership is AdoptConnFrom's: the duplicate is
// aio's, from stays the caller's, who must close it and must not accept on
// it any more (each connection would go to one or the other). Closing the
// Listener does not stop the socket listening while from is open. Any
// goroutine.
func AdoptListenerFrom(l *Loop, from syscall.Conn, cfg ListenConfig, onConn func(c *Conn)) (*Listener, error) {
	fd, err := dupSocket(from)
	if err != nil {
		return nil, fmt.Errorf("aio: adopt tcp listener: %w", err)
	}
	ln, err := AdoptListener(l, fd, cfg, onConn)
	if err != nil {
		_ = sock.Close(fd)
	}
	return ln, err
}

// dupSocket returns a close-on-exec duplicate of from's fd.
func dupSocket(from syscall.Conn) (fd int, err error) {
	if v := reflect.ValueOf(from); from == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return -1, invalid("nil socket")
	}
	// A nil hidden deeper (a value embedding a nil *net.TCPConn, a nil
	// RawConn) panics in from's methods: the caller's mistake, said as
	// one rather than a crash of its goroutine. A panic after the dup
	// (in a Control of the caller's own) must not leak it.
	fd = -1
	defer func() {
		if p := recover(); p != nil {
			if fd >= 0 {
				unix.Close(fd)
			}
			fd, err = -1, invalid(fmt.Sprintf("%T panicked (a nil socket inside it?): %v", from, p))
		}
	}()
	rc, err := from.SyscallConn()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, os.ErrInvalid) {
		// What net's and os's nil receivers say, where they do not panic
		// (a value hiding a nil *net.TCPListener or *os.File).
		return -1, invalid(fmt.Sprintf("nil socket (%T)", from), err)
	}
	if err != nil {
		return -1, err
	}
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = sock.Dup(int(s)) }); err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("dup: %w", derr)
	}
	return fd, nil
}

// checkAdoptable checks that fd is a TCP socket of the IPv4 or IPv6 family,
// listening or connected as listening says, and returns its address and,
// connected, its peer's. It changes nothing.
func checkAdoptable(fd int, listening bool) (local, peer netip.AddrPort, err error) {
	if fd < 0 {
		return local, peer, invalid("negative fd")
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	switch {
	case errnoIs(err, unix.ENOTSOCK):
		return local, peer, fmt.Errorf("not a socket: %w", err)
	case err != nil:
		return local, peer, fmt.Errorf("getsockopt SO_TYPE: %w", err)
	case typ != unix.SOCK_STREAM:
		return local, peer, fmt.Errorf("not a stream socket (SO_TYPE %d)", typ)
	}
	if local, err = sock.LocalAddr(fd); err != nil {
		return local, peer, fmt.Errorf("getsockname: %w", err)
	}
	if !local.IsValid() {
		return local, peer, errors.New("not an IPv4 or IPv6 socket")
	}
	if tcp, proto, err := sock.IsTCP(fd); err != nil {
		return local, peer, fmt.Errorf("getsockopt SO_PROTOCOL: %w", err)
	} else if !tcp {
		return local, peer, fmt.Errorf("not a TCP socket (protocol %d)", proto)
	}
	acc, err := sock.IsListening(fd)
	switch {
	case err != nil:
		return local, peer, fmt.Errorf("getsockopt SO_ACCEPTCONN: %w", err)
	case listening && !acc:
		return local, peer, errors.New("not listening (a connection is adopted by AdoptConn)")
	case !listening && acc:
		return local, peer, errors.New("a listening socket (adopted by AdoptListener)")
	case listening:
		return local, peer, nil
	}
	if peer, err = sock.PeerAddr(fd); err != nil {
		if errnoIs(err, unix.ENOTCONN) {
			return local, peer, fmt.Errorf("not connected: %w", err)
		}
		return local, peer, fmt.Errorf("getpeername: %w", err)
	}
	return local, peer, nil
}

// takeOver is the part of an adoption that changes the socket, on the
// loop: refused if the loop is stopping or owns fd already, then setOpts,
// then non-blocking and close-on-exec. On the loop.
func takeOver(l *Loop, fd int, setOpts func() error) error {
	l.checkOnLoop()
	switch {
	case l.state.Load() != stateRunning:
		return ErrStopped
	case fd < len(l.fds) && l.fds[fd] != nil:
		return errors.New("the loop owns this fd already")
	}
	if err := setOpts(); err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("set non-blocking: %w", err)
	}
	unix.CloseOnExec(fd)
	return nil
}

// runWait runs fn on l and returns its error: inline on the loop, else
// posted and waited for, with a panic in fn raised again in the caller.
// For the rare operations whose caller needs the loop's answer at once
// (adopting a socket, a RawConn's Control).
func runWait(l *Loop, fn func() error) error {
	if l.OnLoop() {
		return fn()
	}
	var err error
	var p any
	panicked := true
	done := make(chan struct{})
	l.post(func() {
		defer close(done)
		defer func() {
			if panicked {
				p = recover()
			}
		}()
		err = fn()
		panicked = false
	})
	<-done
	if panicked {
		panic(p)
	}
	return err
}
