package aio

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tcpEcho is the echo callback: every byte read is sent back.
func tcpEcho(c *Conn, b []byte) { _ = send(c, b) }

// echoListen listens on 127.0.0.1 with an echo server; the listener is closed
// when the test ends (Stop would close it too).
func echoListen(t *testing.T, l *Loop, cfg ListenConfig) *Listener {
	t.Helper()
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	return ln
}

// echoListenConns is echoListen on addr with cfg, handing each accepted
// connection over on the channel (room for n).
func echoListenConns(t *testing.T, l *Loop, addr string, cfg ListenConfig, n int) (*Listener, <-chan *Conn) {
	t.Helper()
	conns := make(chan *Conn, n)
	ln, err := Listen(l, addr, cfg, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		conns <- c
	})
	require.NoError(t, err)
	return ln, conns
}

// skipWithoutLoopback skips a test on a machine without a loopback address
// for host (no ::1 in some containers).
func skipWithoutLoopback(t *testing.T, host string) {
	t.Helper()
	probe, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("no %s loopback here: %v", host, err)
	}
	require.NoError(t, probe.Close())
}

// netDial connects with Go's net package, with a deadline bounding every
// read and write of the test.
func netDial(t *testing.T, ln *Listener) *net.TCPConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	t.Cleanup(func() { nc.Close() })
	return nc.(*net.TCPConn)
}

// eventually waits for cond, which only counters reveal (there is no event
// to wait on), polling every millisecond up to waitTimeout.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, waitTimeout, time.Millisecond, append([]any{msg}, args...)...)
}

// closedLoopTCP waits until l has no connection or listener open.
func closedLoopTCP(t *testing.T, l *Loop) {
	t.Helper()
	eventually(t, func() bool { s := l.Stats(); return s.TCPOpen == 0 && s.TCPListeners == 0 },
		"connections still open: %+v", l.Stats())
}

// onLoopValue runs fn on l and returns its result.
func onLoopValue[T any](t *testing.T, l *Loop, fn func() T) T {
	t.Helper()
	var v T
	onLoop(t, l, func() { v = fn() })
	return v
}

// pattern fills b with a position-dependent pattern starting at offset off.
func pattern(b []byte, off int) {
	for i := range b {
		b[i] = byte((off + i) * 7 >> 3)
	}
}

// closeListener closes ln and returns its loop.
func (l *Loop) closeListener(t *testing.T, ln *Listener) *Loop {
	t.Helper()
	_, err := wait(t, ln.Close())
	require.NoError(t, err)
	return l
}

// send is Write for tests that only look at the error.
func send(c *Conn, b []byte) error {
	_, err := c.Write(b)
	return err
}

// writeFlush writes b and returns Flush's handle, or a failed one when the
// write is refused.
func writeFlush(c *Conn, b []byte) *Handle[struct{}] {
	if _, err := c.Write(b); err != nil {
		return Fail[struct{}](c.Loop(), err)
	}
	return c.Flush()
}

// rcvBuf is a net.Dialer's or net.ListenConfig's Control that sets the
// socket's receive buffer to size before the connection is made, so that
// autotuning does not grow it.
func rcvBuf(size int) func(network, address string, rc syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, size)
		})
		return errors.Join(err, serr)
	}
}
