package aio

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// SyscallConn's Control runs on the loop with the open socket, whether
// called there (inline) or from a goroutine (posted and waited for); a
// panic in fn reaches the caller; after the close it refuses; Read and
// Write are unsupported.
func TestTCPSyscallConn(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)

	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var onLoopThere bool
	var typ int
	require.NoError(t, rc.Control(func(fd uintptr) {
		onLoopThere = l.OnLoop()
		typ, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	}))
	require.NoError(t, err)
	require.True(t, onLoopThere, "Control ran off the loop")
	require.Equal(t, unix.SOCK_STREAM, typ)

	// On the loop it runs inline, before Control returns.
	var inline bool
	onLoop(t, l, func() {
		ran := false
		require.NoError(t, rc.Control(func(fd uintptr) {
			ran = true
			require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 0))
		}))
		inline = ran
	})
	require.True(t, inline)
	require.NoError(t, rc.Control(func(fd uintptr) {
		typ, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY)
	}))
	require.NoError(t, err)
	require.Zero(t, typ, "the option set through Control is on the socket")

	require.PanicsWithValue(t, "in fn", func() { _ = rc.Control(func(uintptr) { panic("in fn") }) })
	require.ErrorIs(t, rc.Control(nil), ErrNilFunc)
	require.ErrorIs(t, rc.Read(func(uintptr) bool { return true }), errors.ErrUnsupported)
	require.ErrorIs(t, rc.Write(func(uintptr) bool { return true }), errors.ErrUnsupported)
	var _ syscall.Conn = c // net.Conn users look for this interface

	// The listener's.
	lrc, err := ln.SyscallConn()
	require.NoError(t, err)
	var accepting int
	require.NoError(t, lrc.Control(func(fd uintptr) {
		accepting, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	}))
	require.NoError(t, err)
	require.Equal(t, 1, accepting)

	_, err = wait(t, c.Close())
	require.NoError(t, err)
	require.ErrorIs(t, rc.Control(func(uintptr) { t.Error("ran on a closed connection") }), ErrConnClosed)
	_, err = c.SyscallConn()
	require.ErrorIs(t, err, net.ErrClosed)
	l.closeListener(t, ln)
	require.ErrorIs(t, lrc.Control(func(uintptr) { t.Error("ran on a closed listener") }), ErrListenerClosed)
	_, err = ln.SyscallConn()
	require.ErrorIs(t, err, net.ErrClosed)
	closedLoopTCP(t, l)

	// After the loop is gone too.
	_, err = wait(t, l.Stop())
	require.NoError(t, err)
	require.ErrorIs(t, rc.Control(func(uintptr) { t.Error("ran after Stop") }), ErrConnClosed)
}
