package aio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pausedConn accepts one connection on l with cfg, reads the client's
// first bytes and pauses reading in that OnRead (the fd is in the poller by
// then), and returns the listener, the client's end, the server's, and what OnRead got.
// The returned channel carries every later read, and nil at EOF.
func pausedConn(t *testing.T, l *Loop, cfg ConnConfig) (*Listener, *net.TCPConn, *Conn, chan []byte) {
	t.Helper()
	reads := make(chan []byte, 64)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: cfg}, 1)
	nc := netDial(t, ln)
	c := recv(t, conns)
	onLoop(t, l, func() {
		first := true
		require.NoError(t, c.OnRead(func(c *Conn, b []byte) {
			reads <- bytes.Clone(b)
			if first {
				first = false
				require.NoError(t, c.PauseRead())
			}
		}))
		require.NoError(t, c.OnEOF(func(c *Conn) { reads <- nil }))
	})
	_, err := nc.Write([]byte("first"))
	require.NoError(t, err)
	require.Equal(t, "first", string(recv(t, reads)))
	return ln, nc, c, reads
}

// resetCancels resets nc, the peer of c, and requires that c closes with
// one of errs and that pending, held by c's scope, is cancelled.
func resetCancels(t *testing.T, nc *net.TCPConn, c *Conn, pending *Handle[int], errs ...error) {
	t.Helper()
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close()) // RST
	_, err := wait(t, c.Closed())
	require.True(t, slices.ContainsFunc(errs, func(e error) bool { return errors.Is(err, e) }),
		"closed with %v, want one of %v", err, errs)
	_, err = wait(t, pending)
	require.ErrorIs(t, err, ErrCancelled)
	require.Equal(t, Cancelled, pending.Status())
}

// A connection whose reads are paused still learns that the peer reset it:
// it closes with ECONNRESET at once and cancels what its scope holds,
// instead of leaving that work to run to its end.
func TestTCPPausedReadSeesReset(t *testing.T) {
	l := startLoop(t)
	ln, nc, c, _ := pausedConn(t, l, ConnConfig{})
	pending := onLoopValue(t, l, func() *Handle[int] { return Adopt(c.Scope(), NewPromise[int](l).Handle()) })

	resetCancels(t, nc, c, pending, unix.ECONNRESET)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A connection held back by its own full write queue (the peer reads
// nothing) learns of a reset as well: through the write path, which still
// waits for the fd to be writable.
func TestTCPHeldByQueueSeesReset(t *testing.T) {
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{HighWater: 1024}}, 1)
	nc := netDial(t, ln)
	c := recv(t, conns)
	pending := onLoopValue(t, l, func() *Handle[int] {
		require.NoError(t, c.OnRead(func(*Conn, []byte) {}))
		big := make([]byte, 8<<20) // more than both kernels' buffers take
		_, err := c.Write(big)
		require.NoError(t, err)
		return Adopt(c.Scope(), NewPromise[int](l).Handle())
	})
	eventually(t, c.Full, "the queue never filled")
	require.True(t, onLoopValue(t, l, func() bool { return c.held || !c.reading() }))

	resetCancels(t, nc, c, pending, unix.ECONNRESET)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A paused connection whose peer half-closes, and that has shut its own
// side too (so the kernel reports a hang-up), loses none of the bytes it
// has not read and does not spin on the hang-up: the fd leaves the poller,
// and resuming reads everything, then EOF.
func TestTCPPausedHangupKeepsData(t *testing.T) {
	l := startLoop(t)
	ln, nc, c, reads := pausedConn(t, l, ConnConfig{})
	rest := make([]byte, 100_000) // more than one read
	pattern(rest, 0)
	_, err := nc.Write(rest)
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	_, err = wait(t, c.CloseWrite())
	require.NoError(t, err)
	_, err = io.ReadAll(nc) // the server's FIN: both directions are shut
	require.NoError(t, err)
	// The hang-up was seen and the fd taken out of the poller (a spinning
	// loop would keep it there).
	eventually(t, func() bool { return onLoopValue(t, l, func() bool { return !c.inPoll() }) },
		"the hang-up left the fd in the poller")
	require.Equal(t, Running, c.Closed().Status())
	require.Empty(t, reads)

	require.NoError(t, c.ResumeRead())
	var got []byte
	for b := recv(t, reads); b != nil; b = recv(t, reads) {
		got = append(got, b...)
	}
	require.Equal(t, rest, got)
	_, err = wait(t, c.Closed())
	require.NoError(t, err)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A connection that read the peer's FIN without OnEOF waits, not reading,
// for the work its scope holds before it ends; a reset meanwhile closes it
// at once with the reset's error and cancels that work.
func TestTCPEOFWaitingForWorkSeesReset(t *testing.T) {
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{}, 1)
	nc := netDial(t, ln)
	c := recv(t, conns)
	pending := onLoopValue(t, l, func() *Handle[int] {
		require.NoError(t, c.OnRead(func(*Conn, []byte) {}))
		return Adopt(c.Scope(), NewPromise[int](l).Handle())
	})
	_, err := nc.Write([]byte("request"))
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	eventually(t, func() bool { return onLoopValue(t, l, func() bool { return c.endAfterWork }) },
		"the EOF was not read")

	// Linux reports a reset after the peer's FIN (CLOSE_WAIT) as EPIPE.
	resetCancels(t, nc, c, pending, unix.ECONNRESET, unix.EPIPE)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A Pipe that stopped reading one side because the other is full (its
// peer reads nothing) still learns that the stopped side's peer reset it:
// the pipe fails with the reset at once and closes both connections.
func TestPipePausedSideSeesReset(t *testing.T) {
	l := startLoop(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	cfg := ConnConfig{HighWater: 64 << 10}
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: cfg}, 1)
	nc := netDial(t, ln)
	a := recv(t, conns)
	b, err := wait(t, Dial(l, nl.Addr().String(), cfg))
	require.NoError(t, err)
	up, err := nl.Accept() // reads nothing
	require.NoError(t, err)
	t.Cleanup(func() { up.Close() })
	pipe := onLoopValue(t, l, func() *Handle[Piped] { return Pipe(a, b) })
	wrote := make(chan error, 1)
	go func() { _, err := nc.Write(make([]byte, 256<<20)); wrote <- err }()
	eventually(t, func() bool { return onLoopValue(t, l, func() bool { return a.paused }) },
		"the pipe never paused the full direction's source")

	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close()) // RST
	_, err = wait(t, pipe)
	require.ErrorIs(t, err, unix.ECONNRESET)
	require.Error(t, recv(t, wrote))
	closedLoopTCP(t, l.closeListener(t, ln))
}
