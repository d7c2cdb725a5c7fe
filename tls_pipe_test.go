package aio

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tlsHalf is a crypto/tls end over a TCP connection whose CloseWrite ends
// both layers, as aio's does: close_notify, then FIN.
type tlsHalf struct {
	*tls.Conn
	raw *net.TCPConn
}

func (h tlsHalf) CloseWrite() error {
	return errors.Join(h.Conn.CloseWrite(), h.raw.CloseWrite())
}
func (h tlsHalf) SetReadBuffer(n int) error  { return h.raw.SetReadBuffer(n) }
func (h tlsHalf) SetWriteBuffer(n int) error { return h.raw.SetWriteBuffer(n) }

// tlsDuplex runs duplex over h, then requires the FIN right after the
// close_notify that ended the plaintext.
func tlsDuplex(h tlsHalf, sendOff, recvOff, total int) error {
	if err := duplex(h, sendOff, recvOff, total); err != nil {
		return err
	}
	if n, err := h.raw.Read(make([]byte, 1)); err != io.EOF {
		return fmt.Errorf("after close_notify: %d bytes, %v (want the FIN)", n, err)
	}
	return nil
}

// countSplices makes spliceFn count its calls until the test ends.
func countSplices(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	real := spliceFn
	t.Cleanup(func() { spliceFn = real })
	spliceFn = func(out, in, k int) (int, error) {
		n.Add(1)
		return real(out, in, k)
	}
	return &n
}

// Pipe between a TLS connection and a plain one, and between two TLS
// ones, moves several MiB each way byte-exact through small socket
// buffers, with slow readers at both ends; a peer's half-close passes on
// (to a TLS side as close_notify, then FIN), and both connections close
// in order. No byte takes the splice path: TLS plaintext must go through
// crypto/tls.
func TestPipeTLS(t *testing.T) {
	const total = 4 << 20
	server, client := tlsConfigs(t)
	for _, upTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("upstream TLS %v", upTLS), func(t *testing.T) {
			splices := countSplices(t)
			upstream, upDone := acceptOnce(t, func(nc *net.TCPConn) error {
				if upTLS {
					return tlsDuplex(tlsHalf{tls.Server(nc, server), nc}, 1<<30, 0, total)
				}
				return duplex(nc, 1<<30, 0, total)
			})
			fds := fdCount(t)
			l := startLoop(t)
			dialer := &Dialer{Conn: smallBuffers}
			if upTLS {
				dialer.TLS = client
			}
			pipes := make(chan *Handle[Piped], 1)
			ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: server, Conn: smallBuffers}, func(c *Conn) {
				Then(Adopt(c.Scope(), dialer.Dial(l, upstream)), func(u *Conn) (struct{}, error) {
					pipes <- Pipe(c, u)
					return struct{}{}, nil
				})
			})
			require.NoError(t, err)

			nc := netDial(t, ln)
			clientDone := make(chan error, 1)
			go func() { clientDone <- tlsDuplex(tlsHalf{tls.Client(nc, client), nc}, 0, 1<<30, total) }()
			require.NoError(t, recv(t, clientDone), "client")
			require.NoError(t, recv(t, upDone), "upstream")
			got, err := wait(t, recv(t, pipes))
			require.NoError(t, err)
			require.Equal(t, Piped{AToB: total, BToA: total}, got)
			require.Zero(t, splices.Load(), "a TLS side spliced")
			closedLoopTCP(t, l.closeListener(t, ln))
			require.NoError(t, nc.Close())
			require.Zero(t, l.Stats().TCPWriteQueued)
			require.Equal(t, fds+2, fdCount(t), "only the loop's poller fds are left") // epoll + wakeup
		})
	}
}

// tlsViewPair returns the NetConn view of a TLS connection accepted with
// cfg's options and a crypto/tls client to it, its handshake done, over
// raw. Both sides use an Ethernet-sized MSS (see setMSS).
func tlsViewPair(t *testing.T, l *Loop, cfg ListenConfig) (view net.Conn, c *Conn, peer *tls.Conn, raw *net.TCPConn) {
	t.Helper()
	server, client := tlsConfigs(t)
	cfg.TLS = server
	accepted := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) { accepted <- c })
	require.NoError(t, err)
	rc, err := ln.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, setMSS(rc))
	d := net.Dialer{Timeout: waitTimeout, Control: func(_, _ string, rc syscall.RawConn) error { return setMSS(rc) }}
	nc, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	peer = tls.Client(nc, client)
	require.NoError(t, peer.Handshake())
	c = recv(t, accepted)
	l.closeListener(t, ln)
	return c.NetConn(), c, peer, nc.(*net.TCPConn)
}

// A TLS connection's NetConn view works as a plain one's: io.Copy both
// ways, 4 MiB, byte-exact through small buffers, its half-close a
// close_notify; io.ReadFull; read and write deadlines.
func TestNetConnTLS(t *testing.T) {
	const size = 4 << 20
	l := startLoop(t)
	fds := fdCount(t)
	small := ConnConfig{ReadBuffer: 16 << 10, WriteBuffer: 16 << 10, HighWater: 64 << 10}
	view, c, peer, raw := tlsViewPair(t, l, ListenConfig{Conn: small})
	require.NoError(t, raw.SetReadBuffer(16<<10))
	require.NoError(t, raw.SetWriteBuffer(16<<10))

	// Deadlines: a read deadline passes, then, cleared, io.ReadFull reads.
	require.NoError(t, view.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	buf := make([]byte, 64)
	_, err := view.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	_, err = peer.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, view.SetReadDeadline(time.Time{}))
	n, err := io.ReadFull(view, buf[:5])
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))
	// A peer that does not read: Write stops at its deadline.
	big := make([]byte, 16<<20)
	require.NoError(t, view.SetWriteDeadline(time.Now().Add(100*time.Millisecond)))
	n, err = view.Write(big)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Less(t, n, len(big))
	got := make([]byte, n)
	_, err = io.ReadFull(peer, got)
	require.NoError(t, err)
	require.Equal(t, make([]byte, n), got, "what Write queued arrives")
	require.NoError(t, view.SetWriteDeadline(time.Time{}))

	// io.Copy both ways: the peer streams and half-closes (close_notify,
	// FIN); the view echoes to EOF and half-closes (the peer's ReadAll
	// ends at its close_notify).
	copyBothWays(t, view, tlsHalf{peer, raw}, size)

	require.NoError(t, view.Close())
	require.NoError(t, raw.Close())
	closedView(t, c)
	require.Equal(t, fds, fdCount(t))
	closedLoopTCP(t, l)
}
