package aio

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// tlsProxyPair starts a TLS-terminating proxy on l (TLS listener, plain
// upstream on a Go listener) and connects a crypto/tls client: the
// client's TLS end and its raw socket, the upstream's end, and the pipe.
func tlsProxyPair(t *testing.T, l *Loop) (*Listener, *tls.Conn, *net.TCPConn, *net.TCPConn, *Handle[Piped]) {
	t.Helper()
	server, client := tlsConfigs(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	pipes := make(chan *Handle[Piped], 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: server}, func(c *Conn) {
		Then(Adopt(c.Scope(), Dial(l, nl.Addr().String(), ConnConfig{})), func(u *Conn) (struct{}, error) {
			pipes <- Pipe(c, u)
			return struct{}{}, nil
		})
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, client) // the proxy dials once the handshake is done
	nc := tc.NetConn().(*net.TCPConn)
	require.NoError(t, nl.(*net.TCPListener).SetDeadline(time.Now().Add(waitTimeout)))
	a, err := nl.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	up := a.(*net.TCPConn)
	require.NoError(t, up.SetDeadline(time.Now().Add(waitTimeout)))
	return ln, tc, nc, up, recv(t, pipes)
}

// A TLS client whose stream is cut inside a record (FIN mid-record: the
// proxy's crypto/tls fails with io.ErrUnexpectedEOF) must not look like a
// clean end to the plain upstream: the Pipe's doc says a cut stream must
// not be taken for whole, so the upstream should be reset, not FINed.
func TestTLSPipeTruncatedRecordPassesOnAsReset(t *testing.T) {
	l := startLoop(t)
	ln, tc, raw, up, pipe := tlsProxyPair(t, l)
	_, err := tc.Write([]byte("hello"))
	require.NoError(t, err)
	got := make([]byte, 5)
	_, err = io.ReadFull(up, got)
	require.NoError(t, err)
	// The start of a record, then FIN.
	_, err = raw.Write([]byte{23, 3, 3, 0, 40, 1, 2, 3, 4, 5})
	require.NoError(t, err)
	require.NoError(t, raw.CloseWrite())

	_, perr := wait(t, pipe)
	require.ErrorIs(t, perr, io.ErrUnexpectedEOF, "the pipe fails with the truncation")
	_, err = up.Read(make([]byte, 1))
	require.ErrorIs(t, err, unix.ECONNRESET, "upstream took a truncated TLS stream for a whole one (got %v)", err)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A corrupt record from the TLS client (the proxy's crypto/tls fails with
// bad record MAC and sends a fatal alert): same question.
func TestTLSPipeBadRecordPassesOnAsReset(t *testing.T) {
	l := startLoop(t)
	ln, tc, raw, up, pipe := tlsProxyPair(t, l)
	_, err := tc.Write([]byte("hello"))
	require.NoError(t, err)
	_, err = io.ReadFull(up, make([]byte, 5))
	require.NoError(t, err)
	rec := append([]byte{23, 3, 3, 0, 40}, make([]byte, 40)...)
	_, err = raw.Write(rec)
	require.NoError(t, err)

	_, perr := wait(t, pipe)
	require.ErrorContains(t, perr, "bad record MAC")
	_, err = up.Read(make([]byte, 1))
	require.ErrorIs(t, err, unix.ECONNRESET, "upstream took an aborted TLS stream for a whole one (pipe: %v; upstream read: %v)", perr, err)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A FIN between records, without close_notify, ends the TLS stream as
// close_notify does (crypto/tls takes it so): the upstream gets the bytes
// and a FIN, and the pipe completes.
func TestTLSPipeFINWithoutCloseNotifyPassesOnAsFIN(t *testing.T) {
	l := startLoop(t)
	ln, tc, raw, up, pipe := tlsProxyPair(t, l)
	_, err := tc.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, raw.CloseWrite())
	b, err := io.ReadAll(up)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	require.NoError(t, up.CloseWrite())
	_, err = wait(t, pipe)
	require.NoError(t, err)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Resets either way pass on as resets through a TLS-terminating proxy.
func TestTLSPipeResetsPassOn(t *testing.T) {
	for _, upResets := range []bool{true, false} {
		t.Run(map[bool]string{true: "upstream", false: "tls client"}[upResets], func(t *testing.T) {
			l := startLoop(t)
			fds := fdCount(t)
			ln, tc, raw, up, pipe := tlsProxyPair(t, l)
			_, err := tc.Write([]byte("hello"))
			require.NoError(t, err)
			_, err = io.ReadFull(up, make([]byte, 5))
			require.NoError(t, err)
			_, err = up.Write([]byte("world"))
			require.NoError(t, err)
			_, err = io.ReadFull(tc, make([]byte, 5))
			require.NoError(t, err)
			if upResets {
				require.NoError(t, up.SetLinger(0))
				require.NoError(t, up.Close())
			} else {
				require.NoError(t, raw.SetLinger(0))
				require.NoError(t, raw.Close())
			}
			_, perr := wait(t, pipe)
			require.ErrorIs(t, perr, unix.ECONNRESET)
			if upResets {
				_, err = tc.Read(make([]byte, 1))
			} else {
				_, err = up.Read(make([]byte, 1))
			}
			require.ErrorIs(t, err, unix.ECONNRESET)
			closedLoopTCP(t, l.closeListener(t, ln))
			_ = raw.Close()
			_ = up.Close()
			require.Equal(t, fds+1, fdCount(t), "only the Go listener is left")
		})
	}
}

// NetConn over TLS: a peer that resets during a blocked Write.
func TestTLSNetConnResetDuringBlockedWrite(t *testing.T) {
	l := startLoop(t)
	small := ConnConfig{ReadBuffer: 16 << 10, WriteBuffer: 16 << 10, HighWater: 64 << 10}
	view, c, _, raw := tlsViewPair(t, l, ListenConfig{Conn: small})
	require.NoError(t, raw.SetReadBuffer(16<<10))
	errs := make(chan error, 1)
	go func() { _, err := view.Write(make([]byte, 8<<20)); errs <- err }()
	eventually(t, func() bool { return l.Stats().TCPWriteQueued > 32<<10 }, "write not blocked")
	require.NoError(t, raw.SetLinger(0))
	require.NoError(t, raw.Close())
	err := recv(t, errs)
	require.Error(t, err)
	require.True(t, errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE), "%v", err)
	require.NoError(t, view.Close())
	closedView(t, c)
	closedLoopTCP(t, l)
}

// Runtime.Shutdown with a TLS pipe mid-exchange: the client's close_notify
// and FIN, sent after the drain began, pass on; the upstream's reply comes
// back, and Shutdown returns once the pipe ended.
func TestTLSPipeShutdownMidTransfer(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	ln, tc, raw, up, pipe := tlsProxyPair(t, l)
	const size = 1 << 20
	upDone := make(chan error, 1)
	go func() {
		req, err := io.ReadAll(up)
		if err == nil && len(req) != size {
			err = io.ErrShortWrite
		}
		if err == nil {
			_, err = up.Write(req)
		}
		if err == nil {
			err = up.CloseWrite()
		}
		upDone <- err
	}()
	_, err := tc.Write(make([]byte, size/2))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- rt.Shutdown(testCtx(t)) }()
	_, err = wait(t, ln.Closed())
	require.NoError(t, err)
	_, err = tc.Write(make([]byte, size/2))
	require.NoError(t, err)
	require.NoError(t, tlsHalf{tc, raw}.CloseWrite())
	reply, err := io.ReadAll(tc)
	require.NoError(t, err)
	require.Len(t, reply, size)
	require.NoError(t, recv(t, upDone))
	got, err := wait(t, pipe)
	require.NoError(t, err)
	require.Equal(t, Piped{AToB: size, BToA: size}, got)
	require.NoError(t, recv(t, done))
}

// TLS to TLS: a client's reset reaches the TLS upstream as a reset.
func TestTLSPipeTLSToTLSReset(t *testing.T) {
	server, client := tlsConfigs(t)
	l := startLoop(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	upErr := make(chan error, 1)
	go func() {
		c, err := nl.Accept()
		if err != nil {
			upErr <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(waitTimeout))
		s := tls.Server(c, server)
		_, err = io.ReadAll(s)
		upErr <- err
	}()
	pipes := make(chan *Handle[Piped], 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: server}, func(c *Conn) {
		Then(Adopt(c.Scope(), (&Dialer{TLS: client}).Dial(l, nl.Addr().String())), func(u *Conn) (struct{}, error) {
			pipes <- Pipe(c, u)
			return struct{}{}, nil
		})
	})
	require.NoError(t, err)
	raw := netDial(t, ln)
	tc := tls.Client(raw, client)
	_, err = tc.Write([]byte("hello"))
	require.NoError(t, err)
	pipe := recv(t, pipes)
	require.NoError(t, raw.SetLinger(0))
	require.NoError(t, raw.Close())
	_, perr := wait(t, pipe)
	require.ErrorIs(t, perr, unix.ECONNRESET)
	require.ErrorIs(t, recv(t, upErr), unix.ECONNRESET)
	closedLoopTCP(t, l.closeListener(t, ln))
}
