package aio

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tlsEchoes writes msg on tc and requires it back.
func tlsEchoes(t *testing.T, tc net.Conn, msg string) {
	t.Helper()
	_, err := io.WriteString(tc, msg)
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = io.ReadFull(tc, got)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
}

// acceptNet accepts one connection with package net, its peer dialed with
// package net too; both close when the test ends.
func acceptNet(t *testing.T) (accepted, dialed *net.TCPConn) {
	t.Helper()
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	d, err := net.DialTimeout("tcp", nl.Addr().String(), waitTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	a, err := nl.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	require.NoError(t, d.SetDeadline(time.Now().Add(waitTimeout)))
	return a.(*net.TCPConn), d.(*net.TCPConn)
}

// An adopted listening socket with ListenConfig.TLS serves TLS to a
// crypto/tls client, as a listener made by Listen does.
func TestTLSAdoptListener(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	server, client := tlsConfigs(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln, err := AdoptListenerFrom(l, nl.(*net.TCPListener), ListenConfig{TLS: server},
		func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	require.NoError(t, nl.Close())

	tc := tlsDial(t, ln, client)
	tlsEchoes(t, tc, "over an adopted TLS listener")
	require.EqualValues(t, 1, l.Stats().TLSHandshakes)
	require.NoError(t, tc.Close())
	_, err = wait(t, ln.Close())
	require.NoError(t, err)
	closedLoopTCP(t, l)
	require.Equal(t, fds, fdCount(t))
}

// An adopted connection is a TLS server or client as AdoptTLSConfig.Server
// says, with a crypto/tls peer; a client without ServerName verifies the
// peer's IP address.
func TestTLSAdoptConn(t *testing.T) {
	l := startLoop(t)
	server, client := tlsConfigs(t)
	for _, tc := range []struct {
		name   string
		server bool
	}{{"server", true}, {"client", false}} {
		t.Run(tc.name, func(t *testing.T) {
			fds := fdCount(t)
			mine, theirs := acceptNet(t)
			var peer *tls.Conn
			cfg := AdoptTLSConfig{TLS: server, Server: true}
			if tc.server {
				peer = tls.Client(theirs, client)
			} else {
				peer = tls.Server(theirs, server)
				cc := client.Clone()
				cc.ServerName = "" // the peer's IP, 127.0.0.1, is in the certificate
				cfg = AdoptTLSConfig{TLS: cc}
			}
			hsDone := make(chan error, 1)
			go func() { hsDone <- peer.Handshake() }()
			h, err := AdoptTLSConnFrom(l, mine, cfg)
			require.NoError(t, err)
			require.NoError(t, mine.Close()) // the duplicate is aio's
			c, err := wait(t, h)
			require.NoError(t, err)
			require.NoError(t, recv(t, hsDone))
			st, ok := c.TLS()
			require.True(t, ok)
			require.True(t, st.HandshakeComplete)
			require.NoError(t, c.OnRead(tcpEcho))
			tlsEchoes(t, peer, "adopted "+tc.name)

			require.NoError(t, peer.CloseWrite()) // close_notify: aio ends too
			_, err = io.ReadAll(peer)
			require.NoError(t, err, "close_notify back, then EOF")
			_, err = wait(t, c.Closed())
			require.NoError(t, err)
			require.NoError(t, theirs.Close())
			require.Equal(t, fds, fdCount(t))
		})
	}
	s := l.Stats()
	require.EqualValues(t, 2, s.TCPAdopted)
	require.EqualValues(t, 2, s.TLSHandshakes)
	closedLoopTCP(t, l)
}

// A handshake that fails, times out or is cancelled closes the adopted
// connection and fd; a nil Config is refused and leaves fd the caller's.
func TestTLSAdoptConnFailures(t *testing.T) {
	l := startLoop(t)
	server, _ := tlsConfigs(t)
	fds := fdCount(t)

	mine, _ := acceptNet(t)
	_, err := AdoptTLSConnFrom(l, mine, AdoptTLSConfig{Server: true})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "nil TLS config")
	require.Equal(t, fds+2, fdCount(t), "nothing adopted, nothing duplicated")

	// A peer that says nothing: the handshake times out.
	h, err := AdoptTLSConnFrom(l, mine, AdoptTLSConfig{TLS: server, Server: true,
		HandshakeTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrTimeout)

	// A peer that speaks plaintext: the handshake fails.
	mine2, theirs2 := acceptNet(t)
	h2, err := AdoptTLSConnFrom(l, mine2, AdoptTLSConfig{TLS: server, Server: true})
	require.NoError(t, err)
	_, err = io.WriteString(theirs2, "GET / HTTP/1.0\r\n\r\n")
	require.NoError(t, err)
	_, err = wait(t, h2)
	require.ErrorContains(t, err, "tls handshake")

	// Cancelled by the program.
	mine3, _ := acceptNet(t)
	h3, err := AdoptTLSConnFrom(l, mine3, AdoptTLSConfig{TLS: server, Server: true})
	require.NoError(t, err)
	h3.Cancel()
	_, err = wait(t, h3)
	require.ErrorIs(t, err, ErrCancelled)

	closedLoopTCP(t, l)
	// A cancelled handshake's coroutine may count it after the close.
	eventually(t, func() bool { return l.Stats().TLSHandshakeErrors == 3 }, "3 handshakes failed")
	s := l.Stats()
	require.EqualValues(t, 3, s.TCPAdopted)
	require.Zero(t, s.TLSHandshakes)
	for _, c := range []*net.TCPConn{mine, mine2, mine3} {
		require.NoError(t, c.Close())
	}
	require.Equal(t, fds+3, fdCount(t), "only the peers' sockets are left")
}
