package aio

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// ErrListenerClosed is the error of an operation on a Listener that is
// closed. errors.Is(err, net.ErrClosed) holds for it too.
var ErrListenerClosed error = &kindError{"aio: tcp listener closed", []error{net.ErrClosed}}

// errRawIO is what RawConn's Read and Write return: the loop owns the
// socket's readiness, so a caller cannot wait for it.
var errRawIO = fmt.Errorf("aio: tcp: RawConn Read and Write: %w (the loop reads and writes the socket; use Control)",
	errors.ErrUnsupported)

// rawConn is the syscall.RawConn of a Conn or a Listener: Control runs fn on
// the owner's loop while the socket is open.
type rawConn struct {
	l      *Loop      // immutable
	fd     func() int // the fd while the socket is open, else -1; on the loop
	closed error      // what Control returns once it is closed; immutable
}

// SyscallConn returns a syscall.RawConn for the connection's socket, as
// net.TCPConn's does, for socket options aio does not set itself: its
// Control runs fn with the fd on the connection's loop while the connection
// is open, inline when called there; called from another goroutine, it posts
// fn to the loop and waits until it ran (a panic in fn comes back to the
// caller). Called on another loop, that loop waits too: two loops calling
// Control on each other's sockets at once wait for each other for ever, as
// adoption would (post the call to the socket's loop instead, with
// Loop.Post). fn must not close the fd, make it blocking, or keep it past its
// return. Control returns ErrConnClosed once the connection has closed. The
// RawConn's Read and Write return an error for which errors.Is(err,
// errors.ErrUnsupported) holds: the loop waits for the socket's readiness,
// not the caller. Any goroutine; ErrConnClosed after the connection closed.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	if c.gone.Load() {
		return nil, ErrConnClosed
	}
	return &rawConn{l: c.l, fd: c.openFD, closed: ErrConnClosed}, nil
}

// openFD returns the fd while the connection is open, else -1. On the loop.
func (c *Conn) openFD() int {
	c.l.checkOnLoop()
	if c.state != connOpen {
		return -1
	}
	return c.fd
}

// SyscallConn returns a syscall.RawConn for the listening socket: see
// Conn.SyscallConn (ErrListenerClosed once the listener is closed). Any
// goroutine.
func (ln *Listener) SyscallConn() (syscall.RawConn, error) {
	if ln.gone.Load() {
		return nil, ErrListenerClosed
	}
	return &rawConn{l: ln.l, fd: ln.openFD, closed: ErrListenerClosed}, nil
}

// openFD returns the listening fd while the listener is open, else -1. On
// the loop.
func (ln *Listener) openFD() int {
	ln.l.checkOnLoop()
	return ln.fd // -1 once closed
}

// Control runs fn with the socket's fd on its loop: see Conn.SyscallConn.
func (rc *rawConn) Control(fn func(fd uintptr)) error {
	if fn == nil {
		return ErrNilFunc
	}
	return runWait(rc.l, func() error { return rc.control(fn) })
}

// control runs fn with the fd if the socket is open. On the loop.
func (rc *rawConn) control(fn func(fd uintptr)) error {
	fd := rc.fd()
	if fd < 0 {
		return rc.closed
	}
	fn(uintptr(fd))
	return nil
}

// Read is not supported: see Conn.SyscallConn.
func (rc *rawConn) Read(func(fd uintptr) bool) error { return errRawIO }

// Write is not supported: see Conn.SyscallConn.
func (rc *rawConn) Write(func(fd uintptr) bool) error { return errRawIO }
